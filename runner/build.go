package runner

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

// Builder is the build-and-program layer every front end calls: the
// judge's Runner (which adds the compile cache), execute's single runs and
// invoke's executions. Given a language of the table and its code, it
// makes sure the toolchain is there, compiles in the sandbox with the one
// set of compile limits (CompileLimits) when the language is compiled, and
// returns a Program whose runs take their stdin, limits and workspace from
// the caller. What a language needs beyond its recipe's argv (a JVM's
// heap and threads, a compile step's environment) comes from the table
// alone. It is safe for concurrent use.
type Builder struct {
	backend       sandbox.Backend
	langs         *lang.Table
	log           *slog.Logger
	compileLimits sandbox.Limits
	perTest       bool
}

// BuilderOptions configure a Builder. Zero fields take their defaults.
type BuilderOptions struct {
	// CompileLimits bound every compile step. Zero fields take
	// DefaultCompileLimits (see CompileLimits).
	CompileLimits sandbox.Limits
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
	// SandboxPerTest runs every Program.Run of a cached program in a new
	// sandbox, even on a backend that can keep one between runs.
	SandboxPerTest bool
}

// NewBuilder returns a Builder that builds and runs programs in backend
// with the recipes of langs. Its compile limits are not checked here:
// a step whose limits the backend refuses fails as a sandbox error.
func NewBuilder(backend sandbox.Backend, langs *lang.Table, opts BuilderOptions) *Builder {
	b := &Builder{backend: backend, langs: langs, log: opts.Logger, perTest: opts.SandboxPerTest}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	b.compileLimits = CompileLimits(opts.CompileLimits)
	return b
}

// CompileLimits returns the limits every compile step runs with.
func (b *Builder) CompileLimits() sandbox.Limits { return b.compileLimits }

// Backend returns the sandbox backend programs run in.
func (b *Builder) Backend() sandbox.Backend { return b.backend }

// Check makes sure l's toolchain is on this host: an error wrapping
// sandbox.ErrUnavailable says why not.
func (b *Builder) Check(ctx context.Context, l *lang.Language) error {
	tc := l.Discover(ctx)
	if !tc.Available {
		return fmt.Errorf("%w: the %s toolchain is not available here: %s", sandbox.ErrUnavailable, l.ID, tc.Reason)
	}
	return nil
}

// BuildOptions say where a Build's program lives and how its compile
// step is watched.
type BuildOptions struct {
	// Workspace is the host workspace the program is compiled into and
	// runs in (a run's fresh one, or a session's). Empty means the
	// sandbox's private workspace, which only an interpreted language can
	// run in: a compiled program must come back through a host directory.
	Workspace string
	// SampleInterval samples the compile step's CPU time and memory.
	SampleInterval time.Duration
	// Options are the request's files, entry, compiler flags, program
	// arguments and environment, checked by Build (see CheckOptions).
	// Files and Entry make it a program of several files (see
	// lang.Language.Place); the code may then be empty.
	Options judge.ProgramOptions
}

// CheckOptions checks what a request adds to the recipe of l: its
// compiler flags against l's allow-list, its program arguments and its
// environment. A refusal is a *lang.OptionError naming the field. The
// files are checked where they are placed (see lang.Language.Place).
func CheckOptions(l *lang.Language, o judge.ProgramOptions) error {
	if err := l.CheckCompilerFlags(o.CompilerFlags); err != nil {
		return err
	}
	if err := lang.CheckArgs(o.Args); err != nil {
		return err
	}
	return l.CheckEnv(o.Env)
}

// Build makes code of language l ready to run in o.Workspace, with no
// cache: an interpreted program's files are written there by each run; a
// compiled one is compiled there in the sandbox with the compile limits.
// It returns the Program, and the compile step's result for a compiled
// language. When that step did not succeed the Program is nil and the
// result says why (the compiler's output, its status). An error means the
// options were refused (a *lang.OptionError), files that do not fit the
// language were (a *multifile.Error), the toolchain is missing or the
// sandbox failed.
func (b *Builder) Build(ctx context.Context, l *lang.Language, code string, o BuildOptions) (*Program, *sandbox.Result, error) {
	if err := CheckOptions(l, o.Options); err != nil {
		return nil, nil, err
	}
	if err := b.Check(ctx, l); err != nil {
		return nil, nil, err
	}
	p, err := b.newProgram(l, l.ID, code, o.Options)
	if err != nil {
		return nil, nil, err
	}
	p.workspace = o.Workspace
	if !l.Compiled {
		return p, nil, nil
	}
	if o.Workspace == "" {
		return nil, nil, fmt.Errorf("%w: %s is compiled in a host workspace, and none was given", sandbox.ErrUnavailable, l.ID)
	}
	step := b.newStep(l, "", p.place, o.Options.CompilerFlags, false)
	spec := b.compileSpec(step, o.Workspace, b.compileLimits)
	spec.SampleInterval = o.SampleInterval
	res, err := b.backend.Run(ctx, spec)
	if err != nil {
		return nil, nil, fmt.Errorf("compile step: %w", err)
	}
	if res.Status != sandbox.StatusOK {
		return nil, res, nil
	}
	p.inWorkspace = true
	return p, res, nil
}

// Reserved returns the workspace paths a build of l writes itself, which
// no file of a request may take: the compiled program, and a cached
// compile's build cache.
func Reserved(l *lang.Language) map[string]string {
	r := l.Reserved()
	if l.BuildCacheEnv != "" {
		r[goCacheDir] = "where the compiler's build cache is kept"
	}
	return r
}

// newProgram is the Program of code and o's files in l before it is
// compiled, named language as the caller named it, run with the arguments
// and environment of o. Files that do not fit the language are a
// *multifile.Error.
func (b *Builder) newProgram(l *lang.Language, language, code string, o judge.ProgramOptions) (*Program, error) {
	src := o.Source(code)
	place, err := l.Place(src, Reserved(l))
	if err != nil {
		return nil, err
	}
	return &Program{b: b, lang: l, language: language, place: place, withFiles: src.HasFiles(),
		args: slices.Clone(o.Args), env: lang.EnvLayer(o.Env)}, nil
}

// compileSpec is the sandbox spec of a compile step in the host workspace
// ws: no network (no backend gives any), the toolchain read-only, only the
// workspace writable.
func (b *Builder) compileSpec(step *compileStep, ws string, limits sandbox.Limits) *sandbox.Spec {
	return &sandbox.Spec{
		Args:      append([]string(nil), step.args...),
		Env:       append([]string(nil), step.env...),
		Dir:       sandbox.WorkspaceDir,
		Mounts:    append([]sandbox.Mount(nil), step.lang.Mounts...),
		Workspace: ws,
		Files:     append([]sandbox.File(nil), step.files...),
		Limits:    limits,
	}
}

// newStep is the compile step of the program placed as place, with the
// request's compiler flags. A cached step (the judge's) also gets a
// private build cache in its workspace when the language names one; see
// buildCacheEnv.
func (b *Builder) newStep(l *lang.Language, version string, place *lang.Placement, flags []string, cached bool) *compileStep {
	vars := place.Vars(sandbox.WorkspaceDir)
	vars.MemoryMB = int(b.compileLimits.Memory / sandbox.MiB)
	vars.CompilerFlags = flags
	var cache []string
	if cached {
		cache = buildCacheEnv(l)
	}
	return &compileStep{
		lang:    l,
		version: version,
		where:   b.environment(l),
		args:    l.CompileArgs(vars),
		env:     lang.Environment(l.Env, l.CompileEnv, cache),
		source:  place.Entry,
		files:   place.Files,
	}
}

// environment names where l's compiler runs, for the cache key.
func (b *Builder) environment(l *lang.Language) string {
	where := b.backend.Name()
	if im, ok := b.backend.(imager); ok {
		where += " " + im.ImageFor(l.ID)
	}
	return where
}
