package lang

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coderunner/coderunner/sandbox"
)

// DefaultBinary is the file name of the compiled program in the workspace
// when Vars.Binary is empty.
const DefaultBinary = "main"

// sourcesArg is the placeholder that stands for every source file, as a
// whole argument of a compile template.
const sourcesArg = "{sources}"

// DefaultClass is the Java class name used when the code names none.
const DefaultClass = "Solution"

// defaultMemoryMB expands {memory_mb} when the caller gave no limit; it is
// the default memory limit of a run.
const defaultMemoryMB = 256

// Language is one entry of the table, built from a validated Recipe.
//
// Env and Mounts are filled in by Discover; read them after it returned.
// Every other field is fixed when the table is built.
type Language struct {
	// ID is the language's identifier, echoed back in results.
	ID string
	// Aliases are other names Lookup accepts, in lower case.
	Aliases []string
	// Extensions are the file extensions ForFile maps to the language.
	Extensions []string
	// Compiled tells that CompileArgs must run, and succeed, before RunArgs.
	Compiled bool
	// Source is the source file name template ("main.c", "{class}.java").
	Source string
	// Compile and Run are argv templates (see the package documentation).
	Compile, Run []string
	// Sources are the patterns of the files compiled together; see
	// Recipe.Sources.
	Sources []string
	// ProjectFile and ProjectCompile are the compile argv of a workspace
	// holding that file; see Recipe.ProjectFile.
	ProjectFile    string
	ProjectCompile []string
	// Env holds the recipe's KEY=value entries with {tool} and {root}
	// expanded. The backend adds HOME, TMPDIR, LANG and LC_ALL.
	Env []string
	// CompileEnv holds the recipe's KEY=value entries added to Env for the
	// compile step only.
	CompileEnv []string
	// BuildCacheEnv names the compiler's build cache variable (GOCACHE),
	// or is empty; see Recipe.BuildCacheEnv.
	BuildCacheEnv string
	// MinProcesses is the least process limit of a run; see
	// Recipe.MinProcesses.
	MinProcesses int
	// ThreadEnv names the variables of a library's thread count; see
	// Recipe.ThreadEnv and ThreadEnvironment.
	ThreadEnv []string
	// Mounts are the base mounts and the toolchain's, read-only.
	Mounts []sandbox.Mount
	// Image is the container image for the docker backend.
	Image string
	// MemoryFactor and TimeoutFactor scale the limits of the language's
	// runs; they are at least 1.
	MemoryFactor, TimeoutFactor float64
	// Recipe is the merged recipe the language was built from.
	Recipe Recipe

	// flagRules is the compiled allow-list of Recipe.CompilerFlags.
	flagRules []*regexp.Regexp

	baseMounts []string
	// staticTool and staticRoot expand {tool} and {root} before discovery.
	staticTool, staticRoot string
	getenv                 func(string) string

	once sync.Once
	disc atomic.Pointer[discovered]
}

// Vars are the values of the argv placeholders. Empty fields take
// defaults: Workspace is /workspace, Source is the workspace path of
// SourceName's file (with Class), Binary is Workspace/main, Class is
// Solution and MemoryMB is 256.
type Vars struct {
	// Source is the absolute sandbox path of the source file.
	Source string
	// Binary is the absolute sandbox path of the compiled program.
	Binary string
	// Class is the Java class, from JavaClass.
	Class string
	// Workspace is the sandbox's workspace directory.
	Workspace string
	// MemoryMB is the memory limit of the step (compile or run) in MB.
	MemoryMB int
	// CompilerFlags are a request's compiler flags, checked with
	// CheckCompilerFlags: CompileArgs puts them where the template's
	// {compiler_flags} element stands, or else at its end.
	CompilerFlags []string
	// Sources are the absolute sandbox paths {sources} stands for; empty
	// means Source alone.
	Sources []string
	// Project compiles with the ProjectCompile template (the workspace
	// holds ProjectFile).
	Project bool
}

// compilerFlagsElement is the compile argv element replaced by a
// request's compiler flags.
const compilerFlagsElement = "{compiler_flags}"

func newLanguage(id string, r Recipe, base []string) (*Language, error) {
	rules, err := compileFlagRules(r.CompilerFlags)
	if err != nil {
		return nil, fmt.Errorf("%w: languages.%s.compiler_flags%w", ErrInvalidRecipe, id, err)
	}
	l := &Language{
		ID:             id,
		Aliases:        lower(r.Aliases),
		Extensions:     lower(r.Extensions),
		Compiled:       r.Compiled,
		Source:         r.Source,
		Compile:        slices.Clone(r.Compile),
		Run:            slices.Clone(r.Run),
		Sources:        slices.Clone(r.Sources),
		ProjectFile:    r.ProjectFile,
		ProjectCompile: slices.Clone(r.ProjectCompile),
		CompileEnv:     slices.Clone(r.CompileEnv),
		BuildCacheEnv:  r.BuildCacheEnv,
		MinProcesses:   r.MinProcesses,
		ThreadEnv:      slices.Clone(r.ThreadEnv),
		Image:          r.Image,
		MemoryFactor:   atLeastOne(r.MemoryFactor),
		TimeoutFactor:  atLeastOne(r.TimeoutFactor),
		Recipe:         r,
		flagRules:      rules,
		baseMounts:     base,
	}
	tc := r.Toolchain
	l.staticRoot = tc.Mount
	switch {
	case tc.Mount != "" && tc.Tool != "":
		l.staticTool = tc.Mount + "/" + tc.Tool
	case len(tc.Paths) > 0:
		l.staticTool = tc.Paths[0]
	case tc.Program != "":
		l.staticTool = "/usr/bin/" + tc.Program
	}
	return l, nil
}

func lower(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToLower(s)
	}
	return out
}

func atLeastOne(f float64) float64 {
	if f < 1 {
		return 1
	}
	return f
}

// SourceName is the file name the code must be saved under. For a
// template with {class} (Java) the class is the one named by "public
// class X", else the class that declares main, else Solution.
func (l *Language) SourceName(code string) string {
	if !hasClass(l.Source) {
		return l.Source
	}
	return expandClass(l.Source, JavaClass(code))
}

// NeedsClass reports whether the language's file name or commands use the
// {class} placeholder, so that the caller must pass Vars.Class.
func (l *Language) NeedsClass() bool {
	if hasClass(l.Source) {
		return true
	}
	for _, a := range slices.Concat(l.Compile, l.ProjectCompile, l.Run) {
		if hasClass(a) {
			return true
		}
	}
	return false
}

func hasClass(s string) bool {
	return strings.Contains(s, "{class}") || strings.Contains(s, "{classname}")
}

func expandClass(s, class string) string {
	return strings.NewReplacer("{class}", class, "{classname}", class).Replace(s)
}

// RunLimits returns the limits of a run of the language: limits with the
// process limit raised to MinProcesses where it is lower (a JVM's
// threads). Zero fields stay zero.
func (l *Language) RunLimits(limits sandbox.Limits) sandbox.Limits {
	if l.MinProcesses > limits.WithDefaults().Processes {
		limits.Processes = l.MinProcesses
	}
	return limits
}

// ThreadEnvironment is the NAME=n entries of ThreadEnv for a run within
// limits (zero fields taking their defaults): n is the run's CPU
// allowance rounded up, at least 1 and at most half its process limit, so
// that a library's pool of threads fits what the run may use and leaves
// the program room for its own. Nil for a language without ThreadEnv.
func (l *Language) ThreadEnvironment(limits sandbox.Limits) []string {
	if len(l.ThreadEnv) == 0 {
		return nil
	}
	limits = limits.WithDefaults()
	n := 1
	if c := math.Ceil(limits.CPUs); c > 1 && !math.IsInf(c, 0) {
		n = int(min(c, 1<<16))
	}
	n = max(1, min(n, limits.Processes/2))
	out := make([]string, len(l.ThreadEnv))
	for i, name := range l.ThreadEnv {
		out[i] = name + "=" + strconv.Itoa(n)
	}
	return out
}

// SeedArgs is the argv of the recipe's tmp_seed run with {tool} and
// {root} expanded, and the directory of /tmp its file goes to; nil and ""
// for a language without one.
func (l *Language) SeedArgs() (argv []string, dir string) {
	seed := l.Recipe.TmpSeed
	if seed == nil {
		return nil, ""
	}
	return l.expand(seed.Run, Vars{}), seed.Dir
}

// CompileArgs is the compile argv with its placeholders expanded, or nil
// for an interpreted language. {tool} and {root} take their discovered
// values once Discover ran. v.CompilerFlags replace the template's
// {compiler_flags} element, or are appended; they are not checked here
// (CheckCompilerFlags does).
func (l *Language) CompileArgs(v Vars) []string {
	tmpl := l.Compile
	if v.Project && len(l.ProjectCompile) > 0 {
		tmpl = l.ProjectCompile
	}
	if len(tmpl) == 0 {
		return nil
	}
	out := l.expand(tmpl, v)
	if !slices.Contains(tmpl, compilerFlagsElement) {
		out = append(out, v.CompilerFlags...)
	}
	return out
}

// RunArgs is the run argv with its placeholders expanded, followed by
// args, a request's program arguments (checked with CheckArgs).
func (l *Language) RunArgs(v Vars, args ...string) []string {
	return append(l.expand(l.Run, v), args...)
}

func (l *Language) expand(tmpl []string, v Vars) []string {
	v = l.withDefaults(v)
	tool, root := l.staticTool, l.staticRoot
	if d := l.disc.Load(); d != nil && d.tc.Available {
		tool, root = d.tool, d.root
	}
	r := strings.NewReplacer(
		"{source}", v.Source, "{filename}", v.Source,
		"{binary}", v.Binary,
		"{class}", v.Class, "{classname}", v.Class,
		"{workspace}", v.Workspace,
		"{memory_mb}", strconv.Itoa(v.MemoryMB),
		"{heap_mb}", strconv.Itoa(JVMHeapMB(v.MemoryMB)),
		"{tool}", tool,
		"{root}", root,
	)
	out := make([]string, 0, len(tmpl)+len(v.Sources)+len(v.CompilerFlags))
	for _, a := range tmpl {
		switch a {
		case compilerFlagsElement:
			// A whole element of a compile template: the request's
			// compiler flags, however many.
			out = append(out, v.CompilerFlags...)
			continue
		case sourcesArg:
			// A whole argument, one per source file.
			if len(v.Sources) == 0 {
				out = append(out, v.Source)
			}
			out = append(out, v.Sources...)
			continue
		}
		out = append(out, r.Replace(a))
	}
	return out
}

func (l *Language) withDefaults(v Vars) Vars {
	if v.Workspace == "" {
		v.Workspace = sandbox.WorkspaceDir
	}
	if v.Class == "" {
		v.Class = DefaultClass
	}
	if v.Source == "" {
		v.Source = path.Join(v.Workspace, expandClass(l.Source, v.Class))
	}
	if v.Binary == "" {
		v.Binary = path.Join(v.Workspace, DefaultBinary)
	}
	if v.MemoryMB <= 0 {
		v.MemoryMB = defaultMemoryMB
	}
	return v
}
