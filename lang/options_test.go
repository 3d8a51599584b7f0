package lang

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func lookup(t *testing.T, id string) *Language {
	t.Helper()
	l, err := Default().Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// wantRefused checks that err is an *OptionError for field whose message
// holds want.
func wantRefused(t *testing.T, what string, err error, field, want string) {
	t.Helper()
	var oe *OptionError
	if !errors.As(err, &oe) || !errors.Is(err, ErrInvalidOption) {
		t.Errorf("%s: error %v, want an *OptionError wrapping ErrInvalidOption", what, err)
		return
	}
	if field != "" && oe.Field != field {
		t.Errorf("%s: field %q, want %q (%v)", what, oe.Field, field, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %q does not say %q", what, err, want)
	}
}

func TestCheckArgs(t *testing.T) {
	for _, ok := range [][]string{nil, {}, {"a", "", "b c", "--flag=1", "-B/tmp", "@file", "ünïcode"},
		slices.Repeat([]string{"x"}, MaxArgs)} {
		if err := CheckArgs(ok); err != nil {
			t.Errorf("CheckArgs(%d args): %v", len(ok), err)
		}
	}
	wantRefused(t, "NUL", CheckArgs([]string{"a", "b\x00c"}), "args[1]", "NUL")
	wantRefused(t, "too many", CheckArgs(slices.Repeat([]string{"x"}, MaxArgs+1)), "args", fmt.Sprintf("at most %d", MaxArgs))
	big := strings.Repeat("y", MaxArgsBytes/2)
	wantRefused(t, "too big", CheckArgs([]string{big, big}), "args", fmt.Sprintf("at most %d", MaxArgsBytes))
}

func TestCheckEnvRefuses(t *testing.T) {
	defer func(g func(string) string) { getenv = g }(getenv)
	getenv = func(name string) string {
		if name == "DEPLOY_TOKEN" || name == "DB_PASSWORD" {
			return "hunter2"
		}
		return ""
	}
	tests := []struct {
		name, field, want string
	}{
		{"LD_PRELOAD", "env.LD_PRELOAD", "LD_"},
		{"LD_LIBRARY_PATH", "env.LD_LIBRARY_PATH", "LD_"},
		{"LD_AUDIT", "env.LD_AUDIT", "LD_"},
		{"PATH", "env.PATH", "set by the sandbox"},
		{"HOME", "env.HOME", "set by the sandbox"},
		{"TMPDIR", "env.TMPDIR", "set by the sandbox"},
		{"LANG", "env.LANG", "set by the sandbox"},
		{"LC_ALL", "env.LC_ALL", "set by the sandbox"},
		{"CODERUNNER_API_TOKEN", "env.CODERUNNER_API_TOKEN", "CODERUNNER_"},
		{"CODERUNNER_BACKEND", "env.CODERUNNER_BACKEND", "CODERUNNER_"},
		{"INTERNAL_API_TOKEN", "env.INTERNAL_API_TOKEN", "server's own"},
		{"CONTROL_PLANE_URL", "env.CONTROL_PLANE_URL", "server's own"},
		{"DEPLOY_TOKEN", "env.DEPLOY_TOKEN", "secret-bearing"},
		{"DB_PASSWORD", "env.DB_PASSWORD", "secret-bearing"},
		{"path", `env["path"]`, "must match"},
		{"Foo", `env["Foo"]`, "must match"},
		{"1ABC", `env["1ABC"]`, "must match"},
		{"A-B", `env["A-B"]`, "must match"},
		{"A=B", `env["A=B"]`, "must match"},
		{"A B", `env["A B"]`, "must match"},
		{"A\x00B", `env["A\x00B"]`, "must match"},
		{"", "env", "empty name"},
		{strings.Repeat("A", MaxEnvNameBytes+1), "env", "at most"},
	}
	for _, tt := range tests {
		wantRefused(t, tt.name, CheckEnv(map[string]string{tt.name: "x"}), tt.field, tt.want)
	}
	// A secret-looking name the server does not have is the program's
	// own business.
	if err := CheckEnv(map[string]string{"MY_TOKEN": "t"}); err != nil {
		t.Errorf("MY_TOKEN, absent from the server's environment: %v", err)
	}
}

func TestCheckEnvValuesAndCaps(t *testing.T) {
	if err := CheckEnv(map[string]string{"GREETING": "hello world", "EMPTY": "", "_X1": "a=b;c"}); err != nil {
		t.Fatalf("ordinary variables: %v", err)
	}
	wantRefused(t, "NUL value", CheckEnv(map[string]string{"A": "x\x00y"}), "env.A", "NUL")
	many := map[string]string{}
	for i := range MaxEnv + 1 {
		many[fmt.Sprintf("V%d", i)] = "x"
	}
	wantRefused(t, "too many", CheckEnv(many), "env", fmt.Sprintf("at most %d", MaxEnv))
	big := strings.Repeat("v", MaxEnvBytes/2)
	wantRefused(t, "too big", CheckEnv(map[string]string{"A": big, "B": big}), "env", fmt.Sprintf("at most %d", MaxEnvBytes))
	// The first refusal reported is the same whatever the map's order.
	for range 20 {
		wantRefused(t, "order", CheckEnv(map[string]string{"Z_OK": "", "LD_PRELOAD": "x", "PATH": "y", "A_OK": ""}), "env.LD_PRELOAD", "LD_")
	}
}

// A language's recipe sets variables its toolchain relies on; a request
// may not replace them.
func TestLanguageCheckEnv(t *testing.T) {
	for _, tt := range []struct{ lang, name string }{
		{"java", "JAVA_HOME"}, {"go", "GOROOT"}, {"go", "GOCACHE"}, {"go", "GOPROXY"}, {"go", "CGO_ENABLED"},
		{"python", "PYTHONDONTWRITEBYTECODE"},
	} {
		wantRefused(t, tt.lang+" "+tt.name, lookup(t, tt.lang).CheckEnv(map[string]string{tt.name: "x"}),
			"env."+tt.name, "recipe")
	}
	wantRefused(t, "generic rule", lookup(t, "python").CheckEnv(map[string]string{"LD_PRELOAD": "x"}), "env.LD_PRELOAD", "LD_")
	if err := lookup(t, "java").CheckEnv(map[string]string{"GOROOT": "x", "PYTHONPATH": "/workspace"}); err != nil {
		t.Errorf("java with other languages' names: %v", err)
	}
	// matplotlib's variables are forced; the thread counts are the
	// request's to set.
	for _, name := range []string{"MPLBACKEND", "MPLCONFIGDIR", "MATPLOTLIBRC"} {
		wantRefused(t, "python "+name, lookup(t, "python").CheckEnv(map[string]string{name: "x"}), "env."+name, "recipe")
	}
	for _, name := range lookup(t, "python").ThreadEnv {
		if err := lookup(t, "python").CheckEnv(map[string]string{name: "4"}); err != nil {
			t.Errorf("python %s: %v", name, err)
		}
	}
}

func TestEnvLayerMerge(t *testing.T) {
	l := lookup(t, "python")
	env := Environment(l.Env, EnvLayer(map[string]string{"ZED": "1", "ALPHA": "two=2"}))
	want := []string{"ALPHA=two=2", "ZED=1"}
	if got := env[len(env)-2:]; !slices.Equal(got, want) {
		t.Errorf("environment ends with %q, want %q (sorted, after the recipe's)", got, want)
	}
	if !slices.Contains(env, "PATH=/usr/bin:/bin") || !slices.Contains(env, "HOME=/workspace") {
		t.Errorf("environment %q lost the sandbox's or recipe's own", env)
	}
	if EnvLayer(nil) != nil {
		t.Error("EnvLayer(nil) is not nil")
	}
}

func TestCompilerFlagsAllowed(t *testing.T) {
	for _, tt := range []struct {
		lang  string
		flags []string
	}{
		{"c", []string{"-O0", "-O1", "-O3", "-Os", "-Ofast", "-Og", "-O", "-std=c99", "-std=gnu11", "-Wall", "-Wextra", "-Werror",
			"-Wno-unused-variable", "-Wformat=2", "-Wlogical-op", "-Wpedantic", "-Waddress", "-w", "-pedantic", "-DX=3", "-DNDEBUG",
			"-DN=(1<<20)", "-UDEBUG", "-g", "-g3", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fwrapv",
			"-fno-omit-frame-pointer", "-march=native", "-mavx2", "-lm", "-lpthread", "-pthread", "-static"}},
		{"cpp", []string{"-std=c++20", "-std=gnu++17", "-O2", "-fno-exceptions", "-fsanitize=undefined", "-DLOCAL"}},
		{"rust", []string{"-g", "-Cdebuginfo=2", "-Coverflow-checks=on", "-Cpanic=abort", "-Ctarget-cpu=native", "-Dwarnings",
			"-Aunused_variables", "--cfg=local", "--cap-lints=warn"}},
		{"go", []string{"-gcflags=all=-N -l", "-gcflags=-m", "-ldflags=-s -w", "-ldflags=-X main.version=1.2.3", "-trimpath",
			"-tags=a,b"}},
		{"java", []string{"-g", "-g:none", "-g:source,lines", "-Xlint", "-Xlint:all,-serial", "-nowarn", "-Werror", "-deprecation",
			"-parameters", "--release=11"}},
	} {
		l := lookup(t, tt.lang)
		for _, f := range tt.flags {
			if err := l.CheckCompilerFlags([]string{f}); err != nil {
				t.Errorf("%s %q: %v", tt.lang, f, err)
			}
		}
		if err := l.CheckCompilerFlags(tt.flags[:min(len(tt.flags), MaxCompilerFlags)]); err != nil {
			t.Errorf("%s, together: %v", tt.lang, err)
		}
	}
}

// Every family of flag that lets a compiler read or write a file it is
// given, load code or run a program is refused, each naming the flag.
func TestCompilerFlagsRefused(t *testing.T) {
	for _, tt := range []struct {
		lang  string
		flags []string
	}{
		{"c", []string{
			"-B", "-B/tmp", "-Bprefix", "-specs=x", "-specs=/tmp/x.specs", "--specs=x", "@file", "@/etc/passwd", "-I/etc", "-Iinc",
			"-I", "-L/usr/lib", "-L.", "-include", "-include/etc/passwd", "--include=x", "-imacros", "-isystem/x", "-iquote.",
			"-idirafter/x", "-fplugin=x", "-fplugin-arg-x", "-wrapper", "-wrapper=gdb", "-o", "-o/tmp/x", "-x", "-xc", "--sysroot=/",
			"--sysroot", "-Wl,-T,script", "-Wl,@f", "-Wl,-rpath,x", "-Wa,-adhln=x", "-Wp,-MD,f", "-Xlinker", "-Xassembler",
			"-Xpreprocessor", "-fdump-tree-all", "-fprofile-generate", "-fprofile-use=x", "-save-temps", "-save-temps=obj", "-MF",
			"-MD", "-M", "-aux-info", "-fsanitize-ignorelist=x", "-fsanitize-blacklist=x", "-fdebug-prefix-map=a=b",
			"-fsanitize=thread", "-fsanitize=address,thread", "-fsanitize=leak", "-D", "-DX=a/b", "-DX=\"s\"", "-DX=@f", "-D X", "-U", "-std=c++17",
			"-std=x", "-lcrypto", "-l", "-march=foo", "--param=x", "-print-search-dirs", "-v", "--help", "-###", "-E", "-S", "-c",
			"main.c", "/etc/passwd", "x", "", "-O\n", "-DX=1\n#include <x>", "-\x00", "-Wl", "-W,x",
		}},
		{"rust", []string{
			"-Clinker=/bin/sh", "-C", "-Clink-arg=-Wl", "-Clink-args=x", "-Cprofile-generate=x", "-Cincremental=x",
			"-Cllvm-args=x", "-Cpasses=x", "-L/x", "-L", "-Lnative=x", "--extern", "--extern=foo=/x", "-Zunstable-options",
			"-Z", "--emit=link=/tmp/x", "--emit=asm", "--out-dir=x", "-o", "-lfoo", "@args", "-O", "--edition=2018", "--sysroot=/",
			"--print=cfg", "--crate-type=dylib", "--target=x", "--remap-path-prefix=a=b", "-Copt-level=3",
		}},
		{"java", []string{
			"-processorpath", "-processorpath=x", "-processor", "--processor-path=x", "-J-Xmx1g", "-J", "@argfile", "-cp",
			"-classpath", "--class-path=x", "-sourcepath", "-Xplugin:x", "-Xstdout", "-XDrawDiagnostics", "-d", "-s", "-h",
			"--module-path=x", "-p", "--patch-module=x", "-bootclasspath", "--system=x", "-Akey=v", "-implicit:class",
			"--release=1", "--enable-preview", "-encoding",
		}},
		{"go", []string{
			"-toolexec=/bin/sh", "-toolexec", "-overlay=x.json", "-modfile=x", "-ldflags=-extld=/bin/sh",
			"-ldflags=-extld=sh", "-ldflags=-linkmode=external -extldflags=-x", "-ldflags=-X main.v=1 -extld=sh",
			"-ldflags=-X other.v=1", "-ldflags=-r x", "-gcflags=-importcfg x", "-gcflags=-N -trimpath x", "-o", "-C", "-race",
			"-pgo=x", "-pkgdir=x", "-mod=mod", "-buildmode=plugin", "-asmflags=x", "-work", "-n", "-a", "-cover",
		}},
	} {
		l := lookup(t, tt.lang)
		for _, f := range tt.flags {
			err := l.CheckCompilerFlags([]string{f})
			wantRefused(t, fmt.Sprintf("%s %q", tt.lang, f), err, "compiler_flags[0]", "")
			if f != "" && len(f) <= 64 && err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%q", f)) {
				t.Errorf("%s %q: error %q does not name the flag", tt.lang, f, err)
			}
		}
	}
}

// The fixed deny list holds whatever a configured allow-list lets
// through.
func TestDenyListOverridesAllowList(t *testing.T) {
	tbl, err := New(map[string]Recipe{"c": {CompilerFlags: []string{".*"}}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := tbl.Lookup("c")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CheckCompilerFlags([]string{"-funroll-all-loops"}); err != nil {
		t.Fatalf("the widened allow-list: %v", err)
	}
	for _, f := range []string{"-B/tmp", "@x", "-specs=x", "-Wl,-T,x", "-fplugin=x", "-I.", "-include", "-o", "-xc", "/etc/passwd", "-DX=a/b"} {
		wantRefused(t, f, l.CheckCompilerFlags([]string{f}), "compiler_flags[0]", "")
	}
}

func TestCompilerFlagsCaps(t *testing.T) {
	c := lookup(t, "c")
	wantRefused(t, "too many", c.CheckCompilerFlags(slices.Repeat([]string{"-g"}, MaxCompilerFlags+1)), "compiler_flags", fmt.Sprintf("at most %d", MaxCompilerFlags))
	wantRefused(t, "too long", c.CheckCompilerFlags([]string{"-DX=" + strings.Repeat("1", MaxCompilerFlagBytes)}), "compiler_flags[0]", "bytes long")
	wantRefused(t, "index", c.CheckCompilerFlags([]string{"-O2", "-Wall", "-B/tmp"}), "compiler_flags[2]", "-B/tmp")
	for _, id := range []string{"python", "python3", "javascript", "bash"} {
		wantRefused(t, id, lookup(t, id).CheckCompilerFlags([]string{"-O2"}), "compiler_flags", "has no compile step")
		if err := lookup(t, id).CheckCompilerFlags(nil); err != nil {
			t.Errorf("%s with no flags: %v", id, err)
		}
	}
}

// Flags go at the end of the compile argv, or where {compiler_flags}
// stands (go build reads its flags before the files).
func TestCompileArgsPlacesFlags(t *testing.T) {
	c := lookup(t, "c").CompileArgs(Vars{CompilerFlags: []string{"-O0", "-DX=3"}})
	if got := c[len(c)-3:]; !slices.Equal(got, []string{"-lm", "-O0", "-DX=3"}) {
		t.Errorf("c argv %q, want the flags after the recipe's", c)
	}
	g := lookup(t, "go").CompileArgs(Vars{CompilerFlags: []string{"-trimpath", "-ldflags=-s -w"}})
	i := slices.Index(g, "-trimpath")
	if i < 0 || g[i+1] != "-ldflags=-s -w" || slices.Index(g, "-o") < i || slices.Index(g, "/workspace/main.go") < i {
		t.Errorf("go argv %q, want the flags before -o and the source", g)
	}
	if slices.Contains(lookup(t, "go").CompileArgs(Vars{}), compilerFlagsElement) {
		t.Error("go argv without flags keeps the placeholder")
	}
	r := lookup(t, "python").RunArgs(Vars{}, "a", "b c")
	if got := r[len(r)-3:]; !slices.Equal(got, []string{"/workspace/main.py", "a", "b c"}) {
		t.Errorf("python run argv %q, want the arguments after the source", r)
	}
}
