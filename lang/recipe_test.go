package lang

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestEmbeddedRecipesValidate(t *testing.T) {
	f, err := parseEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bash", "c", "cpp", "go", "java", "javascript", "python", "python3", "rust"}
	if len(f.Languages) != len(want) {
		t.Fatalf("embedded languages: got %d, want %d", len(f.Languages), len(want))
	}
	for _, id := range want {
		r, ok := f.Languages[id]
		if !ok {
			t.Errorf("embedded recipes lack %s", id)
			continue
		}
		if err := r.validate(id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	if got := Default().IDs(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Default().IDs() = %v, want %v", got, want)
	}
}

// TestContractFlags pins the compiler and run flags programs are judged
// under (C11 with -O2 and libm, C++17, optimised Rust, the class Solution
// on the workspace class path): changing one changes verdicts.
func TestContractFlags(t *testing.T) {
	tests := []struct {
		id    string
		argv  func(*Language) []string
		wants []string
	}{
		{"c", (*Language).compileArgs, []string{"-O2", "-std=c11", "-lm"}},
		{"cpp", (*Language).compileArgs, []string{"-O2", "-std=c++17"}},
		{"rust", (*Language).compileArgs, []string{"-O"}},
		{"go", (*Language).compileArgs, []string{"build"}},
		{"java", (*Language).runArgs, []string{"-cp", "/workspace", "Solution"}},
	}
	for _, tt := range tests {
		l, err := Default().Lookup(tt.id)
		if err != nil {
			t.Fatal(err)
		}
		argv := strings.Join(tt.argv(l), " ")
		for _, w := range tt.wants {
			if !strings.Contains(" "+argv+" ", " "+w+" ") {
				t.Errorf("%s: %q lacks %q", tt.id, argv, w)
			}
		}
	}
}

func (l *Language) compileArgs() []string { return l.CompileArgs(Vars{}) }
func (l *Language) runArgs() []string     { return l.RunArgs(Vars{}) }

func decodeOverrides(t *testing.T, src string) (map[string]Recipe, error) {
	t.Helper()
	var m map[string]Recipe
	err := yaml.Unmarshal([]byte(src), &m)
	return m, err
}

func TestOverrideAndExtension(t *testing.T) {
	ov, err := decodeOverrides(t, `
cpp:
  compile: ["{tool}", "-O3", "-std=c++20", "-o", "{binary}", "{source}"]
  image: gcc:13
python:
  # The older shape: extension without its dot.
  image: "python:3.12-slim"
  extension: "py"
  compile: false
java:
  min_processes: 96
go:
  compile_env: []
  build_cache_env: ""
ruby:
  aliases: [rb]
  extension: rb
  source: main.rb
  run: ["{tool}", "{source}"]
  env: [PATH=/usr/bin:/bin]
  toolchain:
    program: ruby
    paths: [/usr/bin/ruby]
`)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := New(ov)
	if err != nil {
		t.Fatal(err)
	}
	cpp, _ := tab.Lookup("cpp")
	if got := strings.Join(cpp.CompileArgs(Vars{}), " "); !strings.Contains(got, "-std=c++20") {
		t.Errorf("cpp compile not overridden: %q", got)
	}
	if cpp.Image != "gcc:13" || !cpp.Compiled || cpp.Source != "main.cpp" {
		t.Errorf("cpp: image %q compiled %v source %q: an override must keep the fields it does not set", cpp.Image, cpp.Compiled, cpp.Source)
	}
	py, _ := tab.Lookup("python")
	if py.Image != "python:3.12-slim" || strings.Join(py.Extensions, ",") != ".py" || py.Compiled {
		t.Errorf("python override: %+v", py)
	}
	java, _ := tab.Lookup("java")
	golang, _ := tab.Lookup("go")
	if java.MinProcesses != 96 || len(golang.CompileEnv) != 0 || golang.BuildCacheEnv != "" || !golang.Compiled {
		t.Errorf("tuning overrides: java min_processes %d, go compile_env %q build_cache_env %q",
			java.MinProcesses, golang.CompileEnv, golang.BuildCacheEnv)
	}
	rb, err := tab.Lookup("RB")
	if err != nil {
		t.Fatal(err)
	}
	if rb.ID != "ruby" || rb.Source != "main.rb" {
		t.Errorf("ruby: %+v", rb)
	}
	if l, err := tab.ForFile("x.rb"); err != nil || l != rb {
		t.Errorf("ForFile(x.rb) = %v, %v", l, err)
	}
	// The default table is untouched.
	if c, _ := Default().Lookup("cpp"); c.Image != "gcc:12" {
		t.Errorf("Default() changed: cpp image %q", c.Image)
	}
}

func TestGoOverrideNonZeroFields(t *testing.T) {
	tab, err := New(map[string]Recipe{"c": {Image: "alpine-gcc"}})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := tab.Lookup("c")
	if c.Image != "alpine-gcc" || !c.Compiled || len(c.Compile) == 0 {
		t.Errorf("c: %+v", c)
	}
}

func TestBadYAML(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"unknown field", "c:\n  compiler: gcc\n", `unknown recipe field "compiler"`},
		{"unknown toolchain field", "c:\n  toolchain:\n    progam: gcc\n", "field progam not found"},
		{"unknown mount field", "c:\n  mounts: [{source: /opt/x, writable: true}]\n", "field writable not found"},
		{"unknown seed field", "c:\n  tmp_seed: {run: [/x], dir: d, mode: rw}\n", "field mode not found"},
		{"not a mapping", "c: [1, 2]\n", "must be a mapping"},
		{"wrong type", "c:\n  run: 3\n", "recipe field run"},
		{"twice", "c:\n  compile: [/x]\n  compile_command: [/y]\n", "compile is set twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeOverrides(t, tt.src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestBadRecipes(t *testing.T) {
	ok := func() Recipe {
		return Recipe{Source: "main.x", Run: []string{"{tool}", "{source}"}, Toolchain: Discovery{Program: "x"}}
	}
	tests := []struct {
		name string
		id   string
		r    func() Recipe
		want string
	}{
		{"bad id", "Bad Id", ok, "languages.bad id: id must match"},
		{"no source", "x", func() Recipe { r := ok(); r.Source = ""; return r }, "languages.x.source: empty"},
		{"source with slash", "x", func() Recipe { r := ok(); r.Source = "../a"; return r }, "languages.x.source"},
		{"no run", "x", func() Recipe { r := ok(); r.Run = nil; return r }, "languages.x.run: empty"},
		{"relative argv0", "x", func() Recipe { r := ok(); r.Run = []string{"python3"}; return r }, "languages.x.run: [0]"},
		{"unknown placeholder", "x", func() Recipe { r := ok(); r.Run = []string{"{tool}", "{sauce}"}; return r }, "languages.x.run: [1]: unknown placeholder {sauce}"},
		{"compiled without compile", "x", func() Recipe { r := ok(); r.Compiled = true; return r }, "languages.x.compile: empty"},
		{"compile without compiled", "x", func() Recipe { r := ok(); r.Compile = []string{"{tool}"}; return r }, "languages.x.compile: set although"},
		{"bad env", "x", func() Recipe { r := ok(); r.Env = []string{"NOEQUALS"}; return r }, "languages.x.env[0]"},
		{"bad extension", "x", func() Recipe { r := ok(); r.Extensions = []string{"py"}; return r }, "languages.x.extensions[0]"},
		{"bad alias", "x", func() Recipe { r := ok(); r.Aliases = []string{"a b"}; return r }, "languages.x.aliases[0]"},
		{"mount under root", "x", func() Recipe {
			r := ok()
			r.Mounts = []RecipeMount{{Source: "/root/.cargo"}}
			return r
		}, "languages.x.mounts[0].target"},
		{"mount relative", "x", func() Recipe { r := ok(); r.Mounts = []RecipeMount{{Source: "opt"}}; return r }, "languages.x.mounts[0].source"},
		{"toolchain mount in workspace", "x", func() Recipe {
			r := ok()
			r.Toolchain.RootUp, r.Toolchain.Mount = 2, "/workspace/jdk"
			return r
		}, "languages.x.toolchain.mount"},
		{"mount without root", "x", func() Recipe { r := ok(); r.Toolchain.Mount = "/opt/x"; return r }, "languages.x.toolchain.mount: needs"},
		{"tool escapes", "x", func() Recipe {
			r := ok()
			r.Toolchain.RootUp, r.Toolchain.Tool = 1, "../x"
			return r
		}, "languages.x.toolchain.tool"},
		{"tool without program", "x", func() Recipe { r := ok(); r.Toolchain = Discovery{}; return r }, "languages.x.toolchain: {tool} is used"},
		{"factor", "x", func() Recipe { r := ok(); r.TimeoutFactor = -1; return r }, "languages.x.timeout_factor: -1 is out of range"},
		{"id mismatch", "x", func() Recipe { r := ok(); r.ID = "y"; return r }, "languages.x.id"},
		{"bad compile env", "x", func() Recipe { r := ok(); r.CompileEnv = []string{"GOPROXY"}; return r }, "languages.x.compile_env[0]"},
		{"compile env placeholder", "x", func() Recipe { r := ok(); r.CompileEnv = []string{"A={tool}"}; return r }, "languages.x.compile_env[0]: unknown placeholder"},
		{"bad build cache env", "x", func() Recipe { r := ok(); r.BuildCacheEnv = "GO CACHE"; return r }, "languages.x.build_cache_env"},
		{"min processes", "x", func() Recipe { r := ok(); r.MinProcesses = -1; return r }, "languages.x.min_processes: -1 is out of range"},
		{"seed without run", "x", func() Recipe { r := ok(); r.TmpSeed = &TmpSeed{Dir: "cache"}; return r }, "languages.x.tmp_seed.run: empty"},
		{"seed relative argv0", "x", func() Recipe { r := ok(); r.TmpSeed = &TmpSeed{Run: []string{"python3"}, Dir: "c"}; return r }, "languages.x.tmp_seed.run: [0]"},
		{"seed placeholder", "x", func() Recipe {
			r := ok()
			r.TmpSeed = &TmpSeed{Run: []string{"{tool}", "{source}"}, Dir: "c"}
			return r
		}, "languages.x.tmp_seed.run: [1]: unknown placeholder {source}"},
		{"seed dir escapes", "x", func() Recipe { r := ok(); r.TmpSeed = &TmpSeed{Run: []string{"{tool}"}, Dir: "../workspace"}; return r }, "languages.x.tmp_seed.dir"},
		{"seed dir absolute", "x", func() Recipe { r := ok(); r.TmpSeed = &TmpSeed{Run: []string{"{tool}"}, Dir: "/etc"}; return r }, "languages.x.tmp_seed.dir"},
		{"seed dir empty", "x", func() Recipe { r := ok(); r.TmpSeed = &TmpSeed{Run: []string{"{tool}"}}; return r }, "languages.x.tmp_seed.dir"},
		{"bad thread env", "x", func() Recipe { r := ok(); r.ThreadEnv = []string{"OMP_NUM_THREADS", "A=1"}; return r }, "languages.x.thread_env[1]: \"A=1\" is not a variable name"},
		{"thread env twice", "x", func() Recipe { r := ok(); r.ThreadEnv = []string{"N", "N"}; return r }, "languages.x.thread_env[1]: \"N\" is listed twice"},
		{"thread env set by env", "x", func() Recipe {
			r := ok()
			r.Env, r.ThreadEnv = []string{"OMP_NUM_THREADS=4"}, []string{"OMP_NUM_THREADS"}
			return r
		}, "languages.x.thread_env[0]: \"OMP_NUM_THREADS\" is set by the sandbox or by env"},
		{"thread env set by the sandbox", "x", func() Recipe { r := ok(); r.ThreadEnv = []string{"HOME"}; return r }, "languages.x.thread_env[0]: \"HOME\" is set by the sandbox"},
		{"thread env is the build cache", "x", func() Recipe {
			r := ok()
			r.BuildCacheEnv, r.ThreadEnv = "GOCACHE", []string{"GOCACHE"}
			return r
		}, "languages.x.thread_env[0]: \"GOCACHE\" is build_cache_env"},
		{"flags without compile step", "x", func() Recipe { r := ok(); r.CompilerFlags = []string{"-O"}; return r }, "languages.x.compiler_flags: set although compiled is false"},
		{"bad flag rule", "x", func() Recipe {
			r := ok()
			r.Compiled, r.Compile, r.CompilerFlags = true, []string{"{tool}"}, []string{"-O", "-O("}
			return r
		}, "languages.x.compiler_flags[1]"},
		{"empty flag rule", "x", func() Recipe {
			r := ok()
			r.Compiled, r.Compile, r.CompilerFlags = true, []string{"{tool}"}, []string{""}
			return r
		}, "languages.x.compiler_flags[0]: empty"},
		{"flags element twice", "x", func() Recipe {
			r := ok()
			r.Compiled, r.Compile = true, []string{"{tool}", "{compiler_flags}", "{source}", "{compiler_flags}"}
			return r
		}, "languages.x.compile: [3]: {compiler_flags} appears twice"},
		{"flags element as argv0", "x", func() Recipe {
			r := ok()
			r.Compiled, r.Compile = true, []string{"{compiler_flags}", "{source}"}
			return r
		}, "languages.x.compile: [0]: unknown placeholder {compiler_flags}"},
		{"flags element inside an argument", "x", func() Recipe {
			r := ok()
			r.Compiled, r.Compile = true, []string{"{tool}", "-x{compiler_flags}"}
			return r
		}, "languages.x.compile: [1]: unknown placeholder {compiler_flags}"},
		{"flags element in run", "x", func() Recipe { r := ok(); r.Run = []string{"{tool}", "{compiler_flags}"}; return r }, "languages.x.run: [1]: unknown placeholder {compiler_flags}"},
		{"sources in run", "x", func() Recipe { r := ok(); r.Run = []string{"{tool}", "{sources}"}; return r }, "languages.x.run: [1]: unknown placeholder {sources}"},
		{"sources inside an argument", "x", func() Recipe {
			r := ok()
			r.Compiled, r.Compile = true, []string{"{tool}", "-c={sources}"}
			return r
		}, "languages.x.compile: [1]: {sources} must be a whole argument"},
		{"sources of an interpreter", "x", func() Recipe { r := ok(); r.Sources = []string{"*.py"}; return r }, "languages.x.sources: set although compiled is false"},
		{"sources pattern with a directory", "x", func() Recipe {
			r := ok()
			r.Compiled, r.Compile, r.Sources = true, []string{"{tool}"}, []string{"src/*.c"}
			return r
		}, "languages.x.sources[0]"},
		{"bad sources pattern", "x", func() Recipe {
			r := ok()
			r.Compiled, r.Compile, r.Sources = true, []string{"{tool}"}, []string{"**/[.c"}
			return r
		}, "languages.x.sources[0]: \"**/[.c\": syntax error in pattern"},
		{"project file alone", "x", func() Recipe {
			r := ok()
			r.Compiled, r.Compile, r.ProjectFile = true, []string{"{tool}"}, "go.mod"
			return r
		}, "languages.x.project_file: project_file and project_compile go together"},
		{"project file in a directory", "x", func() Recipe {
			r := ok()
			r.Compiled, r.Compile, r.ProjectFile, r.ProjectCompile = true, []string{"{tool}"}, "a/go.mod", []string{"{tool}"}
			return r
		}, "languages.x.project_file: \"a/go.mod\" must be a plain file name"},
		{"project compile placeholder", "x", func() Recipe {
			r := ok()
			r.Compiled, r.Compile, r.ProjectFile, r.ProjectCompile = true, []string{"{tool}"}, "go.mod", []string{"{tool}", "{nope}"}
			return r
		}, "languages.x.project_compile: [1]: unknown placeholder {nope}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(map[string]Recipe{tt.id: tt.r()})
			if !errors.Is(err, ErrInvalidRecipe) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want ErrInvalidRecipe containing %q", err, tt.want)
			}
		})
	}
}

func TestCollisions(t *testing.T) {
	r := Recipe{Source: "m.x", Run: []string{"/usr/bin/x"}}
	tests := []struct {
		name string
		ov   map[string]Recipe
		want string
	}{
		{"alias of another", map[string]Recipe{"x": {Aliases: []string{"py"}, Source: r.Source, Run: r.Run}}, `"py" already names python`},
		{"alias is an id", map[string]Recipe{"x": {Aliases: []string{"c"}, Source: r.Source, Run: r.Run}}, `"c" already names c`},
		{"extension", map[string]Recipe{"x": {Extensions: []string{".PY"}, Source: r.Source, Run: r.Run}}, `".py" is already used by python`},
		{"override by alias", map[string]Recipe{"py": {Image: "x"}}, `"py" is an alias of python`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.ov)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// FuzzRecipeFile: recipes.yaml's loader, seeded with the real file and
// variations of it, decodes or refuses any bytes, and what it decodes
// builds a table or is refused as an invalid recipe, never a panic.
func FuzzRecipeFile(f *testing.F) {
	f.Add(embeddedRecipes)
	f.Add(bytes.Replace(embeddedRecipes, []byte("python"), []byte("snake"), 1))
	f.Add([]byte("base_mounts: [/usr, /lib]\nlanguages:\n  c:\n    source: main.c\n    compile: true\n"))
	f.Add([]byte("languages: {x: {nope: 1}}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rf, err := parseRecipeFile(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidRecipe) {
				t.Fatalf("error %v does not wrap ErrInvalidRecipe", err)
			}
			return
		}
		if _, err := New(rf.Languages); err != nil && !errors.Is(err, ErrInvalidRecipe) {
			t.Fatalf("error %v does not wrap ErrInvalidRecipe", err)
		}
	})
}

func FuzzRecipeYAML(f *testing.F) {
	f.Add([]byte("c:\n  image: x\n"))
	f.Add([]byte("x:\n  source: a\n  run: [/a]\n  compile: true\n"))
	f.Add([]byte("x:\n  toolchain: {program: a, root_up: 2, mount: /opt/a}\n  run: ['{root}/a']\n  source: a\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m map[string]Recipe
		if yaml.Unmarshal(b, &m) != nil {
			return
		}
		tab, err := New(m)
		if err != nil {
			return
		}
		for _, l := range tab.All() {
			for _, argv := range [][]string{l.CompileArgs(Vars{}), l.RunArgs(Vars{})} {
				if len(argv) > 0 && strings.Contains(argv[0], "{") {
					t.Fatalf("%s: unexpanded placeholder in %q", l.ID, argv)
				}
			}
		}
	})
}

// TestSeedOverride: the configuration replaces a language's tmp_seed, or
// removes it with null; an alias of another recipe's seed is that seed.
func TestSeedOverride(t *testing.T) {
	ov, err := decodeOverrides(t, `
python:
  tmp_seed: {run: ["{tool}", "-c", "print('f')"], dir: other}
python3:
  tmp_seed: null
`)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := New(ov)
	if err != nil {
		t.Fatal(err)
	}
	py, _ := tab.Lookup("python")
	py3, _ := tab.Lookup("python3")
	if argv, dir := py.SeedArgs(); len(argv) != 3 || argv[2] != "print('f')" || dir != "other" {
		t.Errorf("python: %q %q", argv, dir)
	}
	if argv, dir := py3.SeedArgs(); argv != nil || dir != "" {
		t.Errorf("python3 kept its seed: %q %q", argv, dir)
	}
	// The default table's two Pythons share one seed, through a YAML alias.
	a, da := mustLookup(t, Default(), "python").SeedArgs()
	b, db := mustLookup(t, Default(), "python3").SeedArgs()
	if a == nil || da != "matplotlib" || strings.Join(a, " ") != strings.Join(b, " ") || da != db {
		t.Errorf("default seeds: %q %q; %q %q", a, da, b, db)
	}
	if c := mustLookup(t, Default(), "c"); c.Recipe.TmpSeed != nil {
		t.Errorf("c has a seed")
	}
}

func mustLookup(t *testing.T, tab *Table, id string) *Language {
	t.Helper()
	l, err := tab.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
