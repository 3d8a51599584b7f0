package lang

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/coderunner/coderunner/sandbox"
)

// Placeholder sets: which placeholders each kind of template may use.
var (
	argvPlaceholders = set("source", "binary", "class", "workspace", "memory_mb", "heap_mb", "tool", "root",
		// The older names of source and class.
		"classname", "filename")
	compilePlaceholders = set("source", "sources", "binary", "class", "workspace", "memory_mb", "heap_mb", "tool", "root",
		"classname", "filename")
	envPlaceholders     = set("tool", "root", "workspace")
	sourcePlaceholders  = set("class", "classname")
	versionPlaceholders = set("host_tool", "host_root")
	rootCmdPlaceholders = set("host_program")
)

var (
	idPattern  = regexp.MustCompile(`^[a-z0-9][a-z0-9_+.#-]{0,31}$`)
	extPattern = regexp.MustCompile(`^\.[a-z0-9_+-]{1,16}$`)
	envKey     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// validate checks a merged recipe. Messages name the field as the
// configuration file spells it: languages.<id>.<field>.
func (r *Recipe) validate(id string) error {
	f := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: languages.%s.%s: %s", ErrInvalidRecipe, id, field, fmt.Sprintf(format, args...))
	}
	if !idPattern.MatchString(id) {
		return fmt.Errorf("%w: languages.%s: id must match %s", ErrInvalidRecipe, id, idPattern)
	}
	if r.ID != "" && strings.ToLower(r.ID) != id {
		return f("id", "%q differs from its key", r.ID)
	}
	for i, a := range r.Aliases {
		if !idPattern.MatchString(strings.ToLower(a)) {
			return f(fmt.Sprintf("aliases[%d]", i), "%q must match %s", a, idPattern)
		}
	}
	for i, e := range r.Extensions {
		if !extPattern.MatchString(strings.ToLower(e)) {
			return f(fmt.Sprintf("extensions[%d]", i), "%q must be a dot and up to 16 letters or digits", e)
		}
	}
	if r.Source == "" {
		return f("source", "empty")
	}
	if err := checkTemplate(r.Source, sourcePlaceholders); err != nil {
		return f("source", "%v", err)
	}
	if strings.ContainsAny(r.Source, "/\\\x00") || r.Source == "." || r.Source == ".." {
		return f("source", "%q must be a plain file name", r.Source)
	}
	if len(r.Run) == 0 {
		return f("run", "empty")
	}
	if err := checkArgv(r.Run, argvPlaceholders); err != nil {
		return f("run", "%v", err)
	}
	switch {
	case r.Compiled && len(r.Compile) == 0:
		return f("compile", "empty although compiled is true")
	case !r.Compiled && len(r.Compile) > 0:
		return f("compile", "set although compiled is false")
	}
	if err := checkCompileArgv(r.Compile); err != nil {
		return f("compile", "%v", err)
	}
	if !r.Compiled && len(r.CompilerFlags) > 0 {
		return f("compiler_flags", "set although compiled is false")
	}
	if err := r.validateSources(f); err != nil {
		return err
	}
	if err := checkEnv(f, "env", r.Env, envPlaceholders); err != nil {
		return err
	}
	if err := checkEnv(f, "compile_env", r.CompileEnv, nil); err != nil {
		return err
	}
	if r.BuildCacheEnv != "" && !envKey.MatchString(r.BuildCacheEnv) {
		return f("build_cache_env", "%q is not a variable name", r.BuildCacheEnv)
	}
	if err := r.validateThreadEnv(f); err != nil {
		return err
	}
	if err := r.validateTmpSeed(f); err != nil {
		return err
	}
	if r.MinProcesses < 0 || r.MinProcesses > 1024 {
		return f("min_processes", "%d is out of range 0..1024", r.MinProcesses)
	}
	if err := r.validateMounts(f); err != nil {
		return err
	}
	if err := checkArgv(r.Version, versionPlaceholders); err != nil {
		return f("version", "%v", err)
	}
	if r.MemoryFactor < 0 || r.MemoryFactor > 16 {
		return f("memory_factor", "%g is out of range 0..16", r.MemoryFactor)
	}
	if r.TimeoutFactor < 0 || r.TimeoutFactor > 16 {
		return f("timeout_factor", "%g is out of range 0..16", r.TimeoutFactor)
	}
	return r.Toolchain.validate(f, r)
}

// validateTmpSeed checks tmp_seed, when the recipe has one.
func (r *Recipe) validateTmpSeed(f func(field, format string, args ...any) error) error {
	seed := r.TmpSeed
	if seed == nil {
		return nil
	}
	if len(seed.Run) == 0 {
		return f("tmp_seed.run", "empty")
	}
	if err := checkArgv(seed.Run, set("tool", "root")); err != nil {
		return f("tmp_seed.run", "%v", err)
	}
	if err := sandbox.ValidRelativePath(seed.Dir); err != nil {
		return f("tmp_seed.dir", "%v", err)
	}
	return nil
}

// validateMounts checks each mount's source and target.
func (r *Recipe) validateMounts(f func(field, format string, args ...any) error) error {
	for i, m := range r.Mounts {
		if !cleanAbs(m.Source) {
			return f(fmt.Sprintf("mounts[%d].source", i), "%q is not a clean absolute path", m.Source)
		}
		t := m.Target
		if t == "" {
			t = m.Source
		}
		if err := checkTarget(t); err != nil {
			return f(fmt.Sprintf("mounts[%d].target", i), "%v", err)
		}
	}
	return nil
}

func (d *Discovery) validate(f func(field, format string, args ...any) error, r *Recipe) error {
	if d.Program != "" && (strings.ContainsAny(d.Program, "/\x00") || d.Program == "." || d.Program == "..") {
		return f("toolchain.program", "%q must be a bare program name", d.Program)
	}
	for i, p := range d.Paths {
		if !cleanAbs(p) {
			return f(fmt.Sprintf("toolchain.paths[%d]", i), "%q is not a clean absolute path", p)
		}
	}
	if d.RootUp < 0 || d.RootUp > 8 {
		return f("toolchain.root_up", "%d is out of range 0..8", d.RootUp)
	}
	if d.RootUp > 0 && d.RootCommand != nil {
		return f("toolchain.root_command", "set together with toolchain.root_up")
	}
	if err := checkArgv(d.RootCommand, rootCmdPlaceholders); err != nil {
		return f("toolchain.root_command", "%v", err)
	}
	hasRoot := d.RootUp > 0 || len(d.RootCommand) > 0
	if d.Tool != "" {
		if !hasRoot {
			return f("toolchain.tool", "needs toolchain.root_up or toolchain.root_command")
		}
		if p := path.Clean(d.Tool); p != d.Tool || path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			return f("toolchain.tool", "%q must be a clean path relative to the root", d.Tool)
		}
	}
	if d.Mount != "" {
		if !hasRoot {
			return f("toolchain.mount", "needs toolchain.root_up or toolchain.root_command")
		}
		if err := checkTarget(d.Mount); err != nil {
			return f("toolchain.mount", "%v", err)
		}
	}
	for i, p := range d.Requires {
		if !cleanAbs(p) {
			return f(fmt.Sprintf("toolchain.requires[%d]", i), "%q is not a clean absolute path", p)
		}
	}
	hasTool := d.Program != "" || len(d.Paths) > 0
	for _, argv := range [][]string{r.Run, r.Compile} {
		for _, a := range argv {
			if strings.Contains(a, "{tool}") && !hasTool {
				return f("toolchain", "{tool} is used but neither toolchain.program nor toolchain.paths is set")
			}
			if strings.Contains(a, "{root}") && d.Mount == "" && !hasRoot {
				return f("toolchain", "{root} is used but the toolchain has no root")
			}
		}
	}
	if len(r.Version) > 0 && !hasTool {
		return f("version", "needs toolchain.program or toolchain.paths")
	}
	return nil
}

// validateSources checks the fields of a program of several files:
// {sources} only as a whole argument, valid patterns, and a project file
// with its compile argv.
func (r *Recipe) validateSources(f func(field, format string, args ...any) error) error {
	for field, argv := range map[string][]string{"compile": r.Compile, "project_compile": r.ProjectCompile} {
		for i, a := range argv {
			if a != sourcesArg && strings.Contains(a, sourcesArg) {
				return f(field, "[%d]: %s must be a whole argument", i, sourcesArg)
			}
		}
	}
	for i, p := range r.Sources {
		if err := checkSourcePattern(p); err != nil {
			return f(fmt.Sprintf("sources[%d]", i), "%v", err)
		}
	}
	if len(r.Sources) > 0 && !r.Compiled {
		return f("sources", "set although compiled is false")
	}
	switch {
	case (r.ProjectFile == "") != (len(r.ProjectCompile) == 0):
		return f("project_file", "project_file and project_compile go together")
	case r.ProjectFile != "" && !r.Compiled:
		return f("project_file", "set although compiled is false")
	case r.ProjectFile != "" && (strings.ContainsAny(r.ProjectFile, "/\\\x00") || r.ProjectFile == "." || r.ProjectFile == ".."):
		return f("project_file", "%q must be a plain file name", r.ProjectFile)
	}
	if err := checkCompileArgv(r.ProjectCompile); err != nil {
		return f("project_compile", "%v", err)
	}
	return nil
}

// checkSourcePattern accepts a file name pattern, at the top of the
// workspace, or at any depth after "**/".
func checkSourcePattern(p string) error {
	base := strings.TrimPrefix(p, "**/")
	if base == "" || strings.ContainsAny(base, "/\\\x00") {
		return fmt.Errorf("%q must be a file name pattern, optionally after **/", p)
	}
	if _, err := path.Match(base, ""); err != nil {
		return fmt.Errorf("%q: %w", p, err)
	}
	return nil
}

// checkArgv checks an argv template: every argument's placeholders are
// known and argv[0] is absolute once expanded, since the sandbox does no
// PATH lookup.
func checkArgv(argv []string, allowed map[string]bool) error {
	for i, a := range argv {
		if err := checkTemplate(a, allowed); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("[%d]: contains a NUL byte", i)
		}
	}
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "/") && !strings.HasPrefix(argv[0], "{") {
		return fmt.Errorf("[0]: %q must be an absolute path or start with a placeholder such as {tool} or {binary}", argv[0])
	}
	return nil
}

// checkCompileArgv checks a compile argv template: that of checkArgv with
// {sources}, and {compiler_flags} at most once, as a whole element past
// argv[0].
func checkCompileArgv(argv []string) error {
	plain := slices.Clone(argv)
	seen := false
	for i, a := range argv {
		if a != compilerFlagsElement || i == 0 {
			continue
		}
		if seen {
			return fmt.Errorf("[%d]: %s appears twice", i, compilerFlagsElement)
		}
		seen = true
		plain[i] = "-"
	}
	return checkArgv(plain, compilePlaceholders)
}

// checkEnv checks the KEY=value entries of the list field, whose values
// may use the placeholders allowed; f words the error.
func checkEnv(f func(field, format string, args ...any) error, field string, env []string, allowed map[string]bool) error {
	for i, e := range env {
		name := fmt.Sprintf("%s[%d]", field, i)
		k, v, ok := strings.Cut(e, "=")
		if !ok || !envKey.MatchString(k) {
			return f(name, "%q is not KEY=value", e)
		}
		if err := checkTemplate(v, allowed); err != nil {
			return f(name, "%v", err)
		}
	}
	return nil
}

// checkTemplate reports an unknown or unterminated placeholder.
func checkTemplate(s string, allowed map[string]bool) error {
	for {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			return nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return fmt.Errorf("unterminated placeholder in %q", s)
		}
		name := s[i+1 : i+j]
		if !allowed[name] {
			return fmt.Errorf("unknown placeholder {%s}", name)
		}
		s = s[i+j+1:]
	}
}

// checkTarget refuses sandbox paths the backend owns and the host's home
// directories: a toolchain is mounted at a neutral path.
func checkTarget(t string) error {
	if !cleanAbs(t) || t == "/" {
		return fmt.Errorf("%q is not a clean absolute path below /", t)
	}
	for _, r := range []string{"/proc", "/dev", "/etc", "/workspace", "/tmp", "/root", "/home", "/usr", "/bin", "/lib", "/lib64", "/sbin"} {
		if under(t, r) {
			return fmt.Errorf("%q is under %s, which the sandbox reserves", t, r)
		}
	}
	return nil
}

func cleanAbs(p string) bool {
	return path.IsAbs(p) && path.Clean(p) == p && strings.IndexByte(p, 0) < 0 && len(p) <= 4096
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// validateThreadEnv checks thread_env: variable names, none that the
// sandbox or the recipe itself sets (whose value would be lost, or that
// a request could not set), none twice.
func (r *Recipe) validateThreadEnv(f func(field, format string, args ...any) error) error {
	for i, name := range r.ThreadEnv {
		field := fmt.Sprintf("thread_env[%d]", i)
		if !envKey.MatchString(name) {
			return f(field, "%q is not a variable name", name)
		}
		if slices.Contains(r.ThreadEnv[:i], name) {
			return f(field, "%q is listed twice", name)
		}
		for _, list := range [][]string{BaseEnvironment, r.Env, r.CompileEnv} {
			for _, kv := range list {
				if k, _, _ := strings.Cut(kv, "="); k == name {
					return f(field, "%q is set by the sandbox or by env", name)
				}
			}
		}
		if name == r.BuildCacheEnv {
			return f(field, "%q is build_cache_env", name)
		}
	}
	return nil
}
