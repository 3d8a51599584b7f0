package lang

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Bounds on what a request adds to its language's recipe: program
// arguments, compiler flags and environment variables. They keep one
// request from handing the sandbox an argv or environment the kernel
// refuses (ARG_MAX) or the server must hold without limit.
const (
	// MaxArgs bounds the number of program arguments.
	MaxArgs = 256
	// MaxArgsBytes bounds the program arguments together, in bytes.
	MaxArgsBytes = 64 << 10
	// MaxCompilerFlags bounds the number of compiler flags.
	MaxCompilerFlags = 32
	// MaxCompilerFlagBytes bounds each compiler flag, in bytes.
	MaxCompilerFlagBytes = 256
	// MaxEnv bounds the number of environment variables.
	MaxEnv = 64
	// MaxEnvNameBytes bounds the name of each environment variable.
	MaxEnvNameBytes = 128
	// MaxEnvBytes bounds the environment variables together (NAME=value
	// each), in bytes.
	MaxEnvBytes = 64 << 10
)

// OptionError is a request's program argument, compiler flag or
// environment variable that breaks a rule. It wraps ErrInvalidOption.
type OptionError struct {
	// Field names the value as the request spells it: "args[2]",
	// "compiler_flags[0]", "env.LD_PRELOAD", or the list itself.
	Field string
	// Reason says which rule the value breaks.
	Reason string
}

// Error implements error.
func (e *OptionError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap makes the error match ErrInvalidOption.
func (e *OptionError) Unwrap() error { return ErrInvalidOption }

func optionError(field, format string, args ...any) error {
	return &OptionError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// CheckArgs checks program arguments: at most MaxArgs of them, together
// at most MaxArgsBytes, none holding a NUL byte (which the kernel's argv
// cannot carry: it would cut the argument short).
func CheckArgs(args []string) error {
	if len(args) > MaxArgs {
		return optionError("args", "%d arguments, at most %d", len(args), MaxArgs)
	}
	total := 0
	for i, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			return optionError(fmt.Sprintf("args[%d]", i), "contains a NUL byte")
		}
		total += len(a) + 1
	}
	if total > MaxArgsBytes {
		return optionError("args", "%d bytes together, at most %d", total, MaxArgsBytes)
	}
	return nil
}

// envName is what a request's environment variable may be called.
var envName = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

// serverEnv are variables of the server's own that a program may not be
// given, even with a value of its choosing: they configure the server
// (CODERUNNER_* are refused by prefix) or hold its secrets, and a
// program that finds them set would be told something about the server.
// internal/config's tests check that every variable it reads is here or
// under a refused prefix.
var serverEnv = []string{
	"INTERNAL_API_TOKEN", "CONTROL_PLANE_URL", "CONTAINER_ID", "POD_NAME", "RESULTS_DIR",
}

// refusedEnvPrefixes are name prefixes no request may set: the dynamic
// loader's variables (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT: code loaded
// into every program of the sandbox, the compilers' helpers among them)
// and the server's configuration.
var refusedEnvPrefixes = []string{"LD_", "CODERUNNER_"}

// secretWords mark a variable name as secret-bearing: such a name is
// refused when the server's own environment has it, so that a program
// cannot stand in for, or be mistaken for, the server's credential.
var secretWords = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "APIKEY",
	"ACCESS_KEY", "PRIVATE_KEY", "AUTH"}

// getenv reads the server's environment; tests replace it.
var getenv = os.Getenv

// CheckEnvName checks the name of a request's environment variable
// against the rules that hold for every language: it matches
// ^[A-Z_][A-Z0-9_]*$ and is at most MaxEnvNameBytes long; it is not one
// BaseEnvironment sets (PATH, HOME, TMPDIR, LANG, LC_ALL), not under
// LD_ or CODERUNNER_, not a variable of the server's own (INTERNAL_API_TOKEN,
// CONTROL_PLANE_URL …), and not a secret-bearing name (…TOKEN, …SECRET,
// …PASSWORD, …KEY …) that the server's own environment has.
func CheckEnvName(name string) error {
	field := "env." + name
	switch {
	case name == "":
		return optionError("env", "a variable has an empty name")
	case len(name) > MaxEnvNameBytes:
		return optionError("env", "a variable name of %d bytes, at most %d", len(name), MaxEnvNameBytes)
	case !envName.MatchString(name):
		return optionError(fmt.Sprintf("env[%q]", name), "a variable name must match %s", envName)
	}
	for _, kv := range BaseEnvironment {
		if k, _, _ := strings.Cut(kv, "="); k == name {
			return optionError(field, "set by the sandbox; it cannot be overridden")
		}
	}
	for _, p := range refusedEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return optionError(field, "names starting with %s are refused", p)
		}
	}
	if slices.Contains(serverEnv, name) {
		return optionError(field, "a variable of the server's own; it is refused")
	}
	if secretName(name) && getenv(name) != "" {
		return optionError(field, "a secret-bearing variable of the server's own; it is refused")
	}
	return nil
}

func secretName(name string) bool {
	for _, w := range secretWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// CheckEnv checks a request's environment variables for every language:
// CheckEnvName for each name, values without NUL bytes, at most MaxEnv
// variables and MaxEnvBytes together. Names are checked in sorted order,
// so that the first refusal reported does not depend on map order.
func CheckEnv(env map[string]string) error {
	if len(env) > MaxEnv {
		return optionError("env", "%d variables, at most %d", len(env), MaxEnv)
	}
	total := 0
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if err := CheckEnvName(name); err != nil {
			return err
		}
		v := env[name]
		if strings.IndexByte(v, 0) >= 0 {
			return optionError("env."+name, "the value contains a NUL byte")
		}
		total += len(name) + 1 + len(v) + 1
	}
	if total > MaxEnvBytes {
		return optionError("env", "%d bytes together, at most %d", total, MaxEnvBytes)
	}
	return nil
}

// CheckEnv checks a request's environment variables for a run of l:
// the rules of the package's CheckEnv, and no name that l's recipe sets
// (env, compile_env, build_cache_env: JAVA_HOME, GOROOT, GOCACHE …), on
// which its toolchain relies.
func (l *Language) CheckEnv(env map[string]string) error {
	if err := CheckEnv(env); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if l.setsEnv(name) {
			return optionError("env."+name, "set by the %s language's recipe; it cannot be overridden", l.ID)
		}
	}
	return nil
}

// setsEnv reports whether l's recipe sets the variable name.
func (l *Language) setsEnv(name string) bool {
	if name == l.BuildCacheEnv {
		return true
	}
	for _, list := range [][]string{l.Recipe.Env, l.Recipe.CompileEnv} {
		for _, kv := range list {
			if k, _, _ := strings.Cut(kv, "="); k == name {
				return true
			}
		}
	}
	return false
}

// EnvLayer turns a request's environment variables into KEY=value
// entries for Environment, sorted by name: the environment is part of
// what makes two runs alike (a kept sandbox, a container reused).
func EnvLayer(env map[string]string) []string {
	if len(env) == 0 {
		return nil
	}
	out := make([]string, 0, len(env))
	for _, name := range slices.Sorted(maps.Keys(env)) {
		out = append(out, name+"="+env[name])
	}
	return out
}

// deniedFlagPrefixes are compiler flags refused whatever a language's
// allow-list says, so that no recipe, embedded or configured, can let
// one through: each makes a compiler read or write a file it is told the
// path of, load code (a plugin, a linker, a wrapper), or run another
// program. An allow-list is the first check; this is the second.
var deniedFlagPrefixes = []string{
	// gcc and g++: search paths, specs, plugins, wrappers, outputs,
	// languages, options passed on to the preprocessor, assembler and
	// linker, dump and profile files, dependency files.
	"-B", "-specs", "--specs", "-I", "-L", "-include", "--include", "-imacros", "--imacros", "-iquote",
	"-isystem", "-idirafter", "-isysroot", "-iprefix", "-iwithprefix", "-imultilib", "-iplugindir",
	"-fplugin", "-wrapper", "--wrapper", "-o", "--output", "-x", "--language", "--sysroot", "--prefix",
	"-Wl,", "-Wa,", "-Wp,", "-Xlinker", "-Xassembler", "-Xpreprocessor", "-Xclang", "-save-temps", "-M",
	"-fdump", "-fprofile", "-fauto-profile", "-fsanitize-blacklist", "-fsanitize-ignorelist",
	"-fsanitize-coverage", "-fdebug-prefix-map", "-ffile-prefix-map", "-fmacro-prefix-map",
	"-fcallgraph-info", "-fstack-usage", "-aux-info", "-dump", "-print", "--print", "-fopt-info",
	// rustc: the linker and what it is given, native libraries, crates,
	// unstable options, output paths, profiles.
	"-Clinker", "-Clink-arg", "-Clink-self-contained", "-Cprofile", "-Cincremental", "-Cllvm-args",
	"-Cpasses", "-Cdlltool", "-Cremark", "-Csplit-debuginfo", "--extern", "-Z", "--emit", "--out-dir",
	"--remap-path-prefix", "--crate-type", "--target",
	// javac: annotation processors and plugins (code run by the
	// compiler), options of its own JVM, search paths, output
	// directories, hidden options.
	"-processor", "--processor", "-J", "-Xplugin", "-Xstdout", "-XD", "-classpath", "--class-path",
	"-sourcepath", "--source-path", "--module", "-bootclasspath", "--boot-class-path", "-extdirs",
	"-endorseddirs", "--system", "--upgrade-module-path", "--patch-module", "-implicit", "-Xbootclasspath",
	"--add-", "--limit-modules",
	// go build: a program run around every tool, file substitutions, a
	// module file, the external linker, profiles, other directories.
	"-toolexec", "-overlay", "-modfile", "-pgo", "-pkgdir", "-mod", "-buildmode", "-linkshared",
	"-asmflags", "-compiler", "-gccgoflags", "-race", "-msan", "-asan", "-cover", "-work",
}

// deniedFlagExact are flags refused when they are the whole argument: a
// prefix would also refuse harmless flags that start alike (-s, -static).
var deniedFlagExact = []string{
	"-d", "-s", "-h", "-p", "-C", "-D", "-U", "-cp", "-a", "-n", "-o", "-x", "-A", "-W", "-F",
	"-Wl", "-Wa", "-Wp",
}

// deniedFlagParts are refused anywhere in a flag: go build's -ldflags and
// -gcflags carry the tools' own options (-extld, -extldflags, -importcfg
// name programs and files), and @ makes gcc, rustc and javac read their
// arguments from a file.
var deniedFlagParts = []string{
	"@", "/", "\\", "extld", "toolexec", "importcfg", "embedcfg", "linkmode", "profile", "-o ", "-I ", "-L ", "-r ",
}

// CheckCompilerFlags checks flags for the compile step of l: l must be
// compiled; at most MaxCompilerFlags flags, each one argument of at most
// MaxCompilerFlagBytes printable bytes starting with "-", its value
// attached (-DX=3, --release=17: a flag never takes the next one); each
// matching an entry of the recipe's compiler_flags allow-list; none
// denied by the fixed list (deniedFlagPrefixes and its kin), which no
// allow-list overrides. The error names the flag.
func (l *Language) CheckCompilerFlags(flags []string) error {
	if len(flags) == 0 {
		return nil
	}
	if !l.Compiled {
		return optionError("compiler_flags", "%s has no compile step: it takes no compiler flags", l.ID)
	}
	if len(flags) > MaxCompilerFlags {
		return optionError("compiler_flags", "%d flags, at most %d", len(flags), MaxCompilerFlags)
	}
	for i, f := range flags {
		field := fmt.Sprintf("compiler_flags[%d]", i)
		if err := checkFlagShape(f); err != nil {
			return optionError(field, "%q %v", clip(f), err)
		}
		if deniedFlag(f) {
			return optionError(field, "%q is refused: it could make the compiler read or write files or run other programs", f)
		}
		if !l.allowsFlag(f) {
			return optionError(field, "%q is not among the %s compiler flags allowed (`coderunner langs --json` lists them)", f, l.ID)
		}
	}
	return nil
}

// checkFlagShape refuses what no flag is: empty, too long, not starting
// with "-", or holding control bytes.
func checkFlagShape(f string) error {
	switch {
	case f == "":
		return fmt.Errorf("is empty")
	case len(f) > MaxCompilerFlagBytes:
		return fmt.Errorf("is %d bytes long, at most %d", len(f), MaxCompilerFlagBytes)
	case f[0] != '-':
		return fmt.Errorf("does not start with \"-\": compiler flags name no files")
	}
	for _, c := range []byte(f) {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("contains a control byte")
		}
	}
	return nil
}

// clip shortens a refused flag for its message.
func clip(f string) string {
	if len(f) > 64 {
		return f[:64] + "..."
	}
	return f
}

// deniedFlag reports whether f is on the fixed deny list.
func deniedFlag(f string) bool {
	for _, p := range deniedFlagPrefixes {
		if strings.HasPrefix(f, p) {
			return true
		}
	}
	if slices.Contains(deniedFlagExact, f) {
		return true
	}
	for _, p := range deniedFlagParts {
		if strings.Contains(f, p) {
			return true
		}
	}
	return false
}

// allowsFlag reports whether f matches an entry of l's allow-list.
func (l *Language) allowsFlag(f string) bool {
	for _, re := range l.flagRules {
		if re.MatchString(f) {
			return true
		}
	}
	return false
}

// CompilerFlagRules returns the allow-list of l's compiler flags: the
// recipe's compiler_flags, each a regular expression a whole flag must
// match.
func (l *Language) CompilerFlagRules() []string { return slices.Clone(l.Recipe.CompilerFlags) }

// compileFlagRules compiles an allow-list; each entry must match a whole
// flag.
func compileFlagRules(rules []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(rules))
	for i, r := range rules {
		if r == "" {
			return nil, fmt.Errorf("[%d]: empty", i)
		}
		re, err := regexp.Compile(`^(?:` + r + `)$`)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, re)
	}
	return out, nil
}
