package lang

import (
	"bytes"
	"fmt"
	"maps"
	"strings"

	"gopkg.in/yaml.v3"
)

// Recipe is a language as data: how its source file is named, compiled and
// run, what it needs mounted, and how its toolchain is found on the host.
// It is what recipes.yaml and the configuration file's languages section
// hold.
//
// As an override, a Recipe decoded from YAML replaces exactly the fields
// its YAML sets; a Recipe built in Go replaces the fields that are not
// zero.
type Recipe struct {
	// ID is the language's identifier. In a map of recipes the key is the
	// ID; an ID field, when present, must equal it.
	ID string `yaml:"id,omitempty"`
	// Aliases are other names the language is looked up by.
	Aliases []string `yaml:"aliases,omitempty"`
	// Extensions are file name extensions with their dot (".py"). No two
	// languages may share one.
	Extensions []string `yaml:"extensions,omitempty"`
	// Compiled tells that Compile must succeed before Run.
	Compiled bool `yaml:"compiled,omitempty"`
	// Source is the source file name in the workspace. It may use {class}.
	Source string `yaml:"source,omitempty"`
	// Compile is the compile argv template of a compiled language.
	Compile []string `yaml:"compile,omitempty"`
	// Sources are the patterns of the workspace files a program of several
	// files compiles together (its {sources}): "*.c" matches at the top of
	// the workspace, "**/*.c" at any depth. Empty: the entry alone.
	Sources []string `yaml:"sources,omitempty"`
	// ProjectFile names a file at the top of the workspace (Go's go.mod)
	// whose presence makes the build use ProjectCompile instead of Compile.
	ProjectFile string `yaml:"project_file,omitempty"`
	// ProjectCompile is the compile argv template of a workspace holding
	// ProjectFile (Go: build the module's package in the workspace).
	ProjectCompile []string `yaml:"project_compile,omitempty"`
	// Run is the run argv template. A request's program arguments are
	// appended to it.
	Run []string `yaml:"run,omitempty"`
	// CompilerFlags is the allow-list of the flags a request may add to
	// the compile step: regular expressions, each matching a whole flag
	// (-O[0-3]). A flag no entry matches is refused, and so is a flag of
	// the fixed deny list whatever this list says (see
	// Language.CheckCompilerFlags). The flags are appended to Compile (or
	// ProjectCompile), or put where its {compiler_flags} element stands.
	CompilerFlags []string `yaml:"compiler_flags,omitempty"`
	// Env holds KEY=value entries added to the sandbox environment. PATH
	// must let compilers find their helpers (gcc runs as and ld). It may
	// use {tool}, {root} and {workspace}.
	Env []string `yaml:"env,omitempty"`
	// Mounts are extra host paths made visible read-only.
	Mounts []RecipeMount `yaml:"mounts,omitempty"`
	// Version is an argv run on the host, with {host_tool} and {host_root},
	// whose first line of output is the toolchain's version. It also
	// proves that the toolchain runs.
	Version []string `yaml:"version,omitempty"`
	// Image is the container image the docker backend uses.
	Image string `yaml:"image,omitempty"`
	// MemoryFactor and TimeoutFactor scale the memory and time limits of
	// the language's runs, for runtimes with a fixed start-up cost (a JVM).
	// Zero means 1. The judge applies them; the table only carries them.
	MemoryFactor  float64 `yaml:"memory_factor,omitempty"`
	TimeoutFactor float64 `yaml:"timeout_factor,omitempty"`
	// CompileEnv holds KEY=value entries added to Env for the compile step
	// only (Go's GOPROXY=off: no module download waits for a network that
	// is not there).
	CompileEnv []string `yaml:"compile_env,omitempty"`
	// BuildCacheEnv names the variable through which the compiler finds
	// its build cache (Go's GOCACHE). A compile step whose program is kept
	// (the judge's compile cache) points it at a private directory of its
	// workspace, seeded with the standard library; others keep Env's value.
	// Only Go's cache can be seeded.
	BuildCacheEnv string `yaml:"build_cache_env,omitempty"`
	// MinProcesses raises the process (thread) limit of every run of the
	// language to at least this many: a JVM starts about twenty threads
	// before main runs.
	MinProcesses int `yaml:"min_processes,omitempty"`
	// ThreadEnv names the variables the language's libraries take their
	// thread count from (OpenBLAS's OPENBLAS_NUM_THREADS, OpenMP's
	// OMP_NUM_THREADS …), which would otherwise start a thread per host
	// core within the run's process limit. Every run gets each set to its
	// CPU allowance (see Language.ThreadEnvironment); unlike Env's, a
	// request's env may set them itself, and its value wins.
	ThreadEnv []string `yaml:"thread_env,omitempty"`
	// TmpSeed is a cache every run finds ready in its /tmp rather than
	// building it anew (matplotlib's font list, a second of CPU): built
	// once per server, in a sandbox, by a run with no request in it.
	TmpSeed *TmpSeed `yaml:"tmp_seed,omitempty"`
	// Toolchain tells discovery how to find the toolchain on the host.
	Toolchain Discovery `yaml:"toolchain,omitempty"`

	// set records the YAML keys a decoded recipe had, so that an override
	// can set a field to its zero value (compiled: false).
	set map[string]bool
}

// TmpSeed is how a language's /tmp cache is made: Run, an argv like the
// recipe's run (with {tool} and {root}), runs with the recipe's
// environment and prints the cache file's name on its first line and its
// content after it; every later run finds that file in /tmp/Dir. A Run
// that fails (the library is not installed) leaves the runs without it.
type TmpSeed struct {
	Run []string `yaml:"run"`
	Dir string   `yaml:"dir"`
}

// RecipeMount is a host path made visible read-only inside the sandbox.
type RecipeMount struct {
	// Source is the absolute host path.
	Source string `yaml:"source"`
	// Target is the absolute sandbox path; empty means Source.
	Target string `yaml:"target,omitempty"`
}

// Discovery holds the hints for finding a toolchain on the host.
type Discovery struct {
	// Program is the name looked up in the host's PATH after Paths.
	Program string `yaml:"program,omitempty"`
	// Paths are absolute host paths tried first, in order.
	Paths []string `yaml:"paths,omitempty"`
	// RootUp derives the toolchain root from the program's real path by
	// removing this many trailing elements (2: .../jdk/bin/javac -> .../jdk).
	RootUp int `yaml:"root_up,omitempty"`
	// RootCommand, run on the host with {host_program}, prints the root
	// (rustc --print sysroot asks a rustup proxy for the real toolchain).
	RootCommand []string `yaml:"root_command,omitempty"`
	// Tool is the program's path relative to the root, when the program
	// found is not itself inside the root (a proxy).
	Tool string `yaml:"tool,omitempty"`
	// Mount is the neutral sandbox path where the root is mounted. Without
	// it the toolchain must be visible through the base mounts.
	Mount string `yaml:"mount,omitempty"`
	// FollowLinks mounts, at their own paths, the directories that absolute
	// symbolic links inside the root point to (Debian's JDK links its
	// lib/jvm.cfg and conf files into /etc/java-17-openjdk).
	FollowLinks bool `yaml:"follow_links,omitempty"`
	// Requires are host paths that must exist, already visible through the
	// base mounts (a linker).
	Requires []string `yaml:"requires,omitempty"`
}

// UnmarshalYAML decodes a recipe strictly: an unknown key is an error. It
// also accepts the older shape of a language entry: compile as a bool,
// compile_command, command for run, and a single extension without its
// dot.
func (r *Recipe) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a language recipe must be a mapping", n.Line)
	}
	out := Recipe{set: map[string]bool{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key, known, err := out.decodeField(k.Value, v)
		if !known {
			return fmt.Errorf("line %d: unknown recipe field %q", k.Line, k.Value)
		}
		if err != nil {
			return fmt.Errorf("recipe field %s: %w", k.Value, err)
		}
		if out.set[key] {
			return fmt.Errorf("line %d: recipe field %s is set twice", k.Line, key)
		}
		out.set[key] = true
	}
	*r = out
	return nil
}

// decodeField decodes v, the value of the recipe field key, into r. It
// returns the field's name in this table (the older shape's names map to
// theirs), and known false for a key no recipe has.
func (r *Recipe) decodeField(key string, v *yaml.Node) (field string, known bool, err error) {
	if field, ok, err := r.decodeOlderField(key, v); ok {
		return field, true, err
	}
	switch key {
	case "id":
		err = v.Decode(&r.ID)
	case "aliases":
		err = v.Decode(&r.Aliases)
	case "extensions":
		err = v.Decode(&r.Extensions)
	case "compiled":
		err = v.Decode(&r.Compiled)
	case "source":
		err = v.Decode(&r.Source)
	case "compile":
		err = v.Decode(&r.Compile)
	case "sources":
		err = v.Decode(&r.Sources)
	case "project_file":
		err = v.Decode(&r.ProjectFile)
	case "project_compile":
		err = v.Decode(&r.ProjectCompile)
	case "run":
		err = v.Decode(&r.Run)
	case "compiler_flags":
		err = v.Decode(&r.CompilerFlags)
	case "env":
		err = v.Decode(&r.Env)
	case "mounts":
		err = strictDecode(v, &r.Mounts)
	case "version":
		err = v.Decode(&r.Version)
	case "image":
		err = v.Decode(&r.Image)
	case "memory_factor":
		err = v.Decode(&r.MemoryFactor)
	case "timeout_factor":
		err = v.Decode(&r.TimeoutFactor)
	case "compile_env":
		err = v.Decode(&r.CompileEnv)
	case "build_cache_env":
		err = v.Decode(&r.BuildCacheEnv)
	case "min_processes":
		err = v.Decode(&r.MinProcesses)
	case "thread_env":
		err = v.Decode(&r.ThreadEnv)
	case "tmp_seed":
		err = strictDecode(v, &r.TmpSeed)
	case "toolchain":
		err = strictDecode(v, &r.Toolchain)
	default:
		return key, false, nil
	}
	return key, true, err
}

// decodeOlderField decodes the fields of the older shape whose name or
// value differs from this table's, returning the name it has here; ok
// is false for every other key.
func (r *Recipe) decodeOlderField(key string, v *yaml.Node) (field string, ok bool, err error) {
	switch key {
	case "extension":
		var ext string
		if err = v.Decode(&ext); err == nil {
			if ext != "" && !strings.HasPrefix(ext, ".") {
				ext = "." + ext
			}
			r.Extensions = []string{ext}
		}
		return "extensions", true, err
	case "compile":
		// The older shape writes "compile: true" where this table says
		// "compiled".
		if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool" {
			return "compiled", true, v.Decode(&r.Compiled)
		}
	case "compile_command":
		return "compile", true, v.Decode(&r.Compile)
	case "command":
		return "run", true, v.Decode(&r.Run)
	}
	return "", false, nil
}

// strictDecode decodes n into out refusing unknown keys, which Node.Decode
// alone does not do.
func strictDecode(n *yaml.Node, out any) error {
	// An alias (*name) is marshalled as itself, without its anchor.
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	return dec.Decode(out)
}

// isSet reports whether an override sets field: the YAML had the key, or,
// for a recipe built in Go, the value is not zero.
func (r *Recipe) isSet(field string, nonZero bool) bool {
	if r.set != nil {
		return r.set[field]
	}
	return nonZero
}

// SetsImage reports whether the override r sets the image.
func (r *Recipe) SetsImage() bool { return r.isSet("image", r.Image != "") }

// WithImage returns the override r with its image set to image, as if
// its YAML said so; its other fields stay as they were.
func (r Recipe) WithImage(image string) Recipe {
	r.Image = image
	if r.set != nil {
		set := maps.Clone(r.set)
		set["image"] = true
		r.set = set
	}
	return r
}

// merge returns base with every field o sets replaced by o's value.
func merge(base, o Recipe) Recipe {
	out := base
	out.set = nil
	if o.isSet("id", o.ID != "") {
		out.ID = o.ID
	}
	if o.isSet("aliases", o.Aliases != nil) {
		out.Aliases = o.Aliases
	}
	if o.isSet("extensions", o.Extensions != nil) {
		out.Extensions = o.Extensions
	}
	if o.isSet("compiled", o.Compiled) {
		out.Compiled = o.Compiled
	}
	if o.isSet("source", o.Source != "") {
		out.Source = o.Source
	}
	if o.isSet("compile", o.Compile != nil) {
		out.Compile = o.Compile
	}
	if o.isSet("sources", o.Sources != nil) {
		out.Sources = o.Sources
	}
	if o.isSet("project_file", o.ProjectFile != "") {
		out.ProjectFile = o.ProjectFile
	}
	if o.isSet("project_compile", o.ProjectCompile != nil) {
		out.ProjectCompile = o.ProjectCompile
	}
	if o.isSet("run", o.Run != nil) {
		out.Run = o.Run
	}
	if o.isSet("compiler_flags", o.CompilerFlags != nil) {
		out.CompilerFlags = o.CompilerFlags
	}
	if o.isSet("env", o.Env != nil) {
		out.Env = o.Env
	}
	if o.isSet("mounts", o.Mounts != nil) {
		out.Mounts = o.Mounts
	}
	if o.isSet("version", o.Version != nil) {
		out.Version = o.Version
	}
	if o.isSet("image", o.Image != "") {
		out.Image = o.Image
	}
	if o.isSet("memory_factor", o.MemoryFactor != 0) {
		out.MemoryFactor = o.MemoryFactor
	}
	if o.isSet("timeout_factor", o.TimeoutFactor != 0) {
		out.TimeoutFactor = o.TimeoutFactor
	}
	if o.isSet("compile_env", o.CompileEnv != nil) {
		out.CompileEnv = o.CompileEnv
	}
	if o.isSet("build_cache_env", o.BuildCacheEnv != "") {
		out.BuildCacheEnv = o.BuildCacheEnv
	}
	if o.isSet("min_processes", o.MinProcesses != 0) {
		out.MinProcesses = o.MinProcesses
	}
	if o.isSet("thread_env", o.ThreadEnv != nil) {
		out.ThreadEnv = o.ThreadEnv
	}
	if o.isSet("tmp_seed", o.TmpSeed != nil) {
		out.TmpSeed = o.TmpSeed
	}
	if o.isSet("toolchain", !o.Toolchain.isZero()) {
		out.Toolchain = o.Toolchain
	}
	return out
}

func (d *Discovery) isZero() bool {
	return d.Program == "" && d.Paths == nil && d.RootUp == 0 && d.RootCommand == nil &&
		d.Tool == "" && d.Mount == "" && !d.FollowLinks && d.Requires == nil
}
