package runner

import (
	"context"
	"errors"
	"fmt"
	"github.com/coderunner/coderunner/internal/testutil"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

// compiler is a fake backend whose every run is a compile step.
func compiler(plant func(spec *sandbox.Spec) error) *sandboxtest.Fake {
	return &sandboxtest.Fake{Default: compile(plant)}
}

// compile plays the compiler on the host: the fake has written the spec's
// files into the workspace; plant, when set, adds what the compiler would.
// The step succeeds.
func compile(plant func(spec *sandbox.Spec) error) sandboxtest.Step {
	return func(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
		if spec.Workspace != "" && plant != nil {
			if err := plant(spec); err != nil {
				return nil, err
			}
		}
		return &sandbox.Result{Status: sandbox.StatusOK}, nil
	}
}

func newFake(t *testing.T, be sandbox.Backend, opts Options) *Runner {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = testutil.ReachableDir(t, "runner-internal-")
	}
	r, err := New(be, lang.Default(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// writeBinary plants the compiled program a C recipe names.
func writeBinary(ws string) error {
	return os.WriteFile(filepath.Join(ws, lang.DefaultBinary), []byte("\x7fELF fake"), 0o755)
}

func TestKey(t *testing.T) {
	base := KeyInput{
		Language:     "c",
		Toolchain:    "gcc (Debian 12.2.0-14) 12.2.0",
		Args:         []string{"/usr/bin/gcc", "-O2", "-o", "/workspace/main", "/workspace/main.c"},
		Env:          []string{"PATH=/usr/bin:/bin", "HOME=/workspace"},
		Source:       "main.c",
		SourceSHA256: strings.Repeat("ab", 32),
	}
	variants := map[string]func(k *KeyInput){
		"language":    func(k *KeyInput) { k.Language = "cpp" },
		"toolchain":   func(k *KeyInput) { k.Toolchain = "gcc (Debian 13.1.0) 13.1.0" },
		"environment": func(k *KeyInput) { k.Environment = "docker gcc:13" },
		"flags":       func(k *KeyInput) { k.Args = slices.Replace(slices.Clone(k.Args), 1, 2, "-O0") },
		"env":         func(k *KeyInput) { k.Env = append(slices.Clone(k.Env), "GOFLAGS=-trimpath") },
		"source":      func(k *KeyInput) { k.Source = "Main.java" },
		"code":        func(k *KeyInput) { k.SourceSHA256 = strings.Repeat("cd", 32) },
		// A boundary moved between two arguments is another argv.
		"split": func(k *KeyInput) { k.Args = []string{"/usr/bin/gcc -O2", "-o", "/workspace/main", "/workspace/main.c"} },
		"files": func(k *KeyInput) {
			k.Files = []FileKey{{Path: "util.c", Mode: 0o644, SHA256: strings.Repeat("ef", 32)}}
		},
		"file content": func(k *KeyInput) {
			k.Files = []FileKey{{Path: "util.c", Mode: 0o644, SHA256: strings.Repeat("01", 32)}}
		},
		"file mode": func(k *KeyInput) {
			k.Files = []FileKey{{Path: "util.c", Mode: 0o755, SHA256: strings.Repeat("ef", 32)}}
		},
		"file path": func(k *KeyInput) {
			k.Files = []FileKey{{Path: "lib/util.c", Mode: 0o644, SHA256: strings.Repeat("ef", 32)}}
		},
	}
	want := base.Key()
	if again := base.Key(); again != want {
		t.Fatalf("key not stable: %s then %s", want, again)
	}
	if len(want) != 64 {
		t.Fatalf("key %q is not a hex SHA-256", want)
	}
	seen := map[string]string{want: "base"}
	for name, change := range variants {
		k := base
		change(&k)
		got := k.Key()
		if other, dup := seen[got]; dup {
			t.Errorf("%s: same key as %s", name, other)
		}
		seen[got] = name
	}
}

func TestCompileError(t *testing.T) {
	limits := DefaultCompileLimits
	cases := []struct {
		name string
		res  sandbox.Result
		want []string
	}{
		{"diagnostics", sandbox.Result{Status: sandbox.StatusNonzeroExit, ExitCode: 1, Stderr: []byte("main.c:1: error: x undeclared\n"), Stdout: []byte("note\n")},
			[]string{"main.c:1: error: x undeclared\nnote"}},
		{"silent failure", sandbox.Result{Status: sandbox.StatusNonzeroExit, ExitCode: 4}, []string{"Compilation failed (exit code 4)"}},
		{"wall time", sandbox.Result{Status: sandbox.StatusTimeLimit, TimeLimit: "wall"}, []string{"Compilation timed out (time limit of 30s)"}},
		{"cpu time", sandbox.Result{Status: sandbox.StatusTimeLimit, TimeLimit: "cpu", Stderr: []byte("partial")}, []string{"Compilation timed out (CPU time limit of 30s)\npartial"}},
		{"memory", sandbox.Result{Status: sandbox.StatusMemoryLimit}, []string{"memory limit of 512 MB"}},
		{"child killed", sandbox.Result{Status: sandbox.StatusNonzeroExit, ExitCode: 1, MemoryExceeded: true, Stderr: []byte("cc1 killed")}, []string{"memory limit of 512 MB\ncc1 killed"}},
		{"output", sandbox.Result{Status: sandbox.StatusOutputLimit, Stderr: []byte("error")}, []string{"Compiler output exceeded 1048576 bytes\nerror"}},
		{"signal", sandbox.Result{Status: sandbox.StatusSignaled, Signal: syscall.SIGSEGV}, []string{"Compiler killed by signal 11"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ce := compileError(&c.res, limits)
			for _, w := range c.want {
				if !strings.Contains(ce.Output, w) {
					t.Errorf("output %q does not contain %q", ce.Output, w)
				}
			}
			if ce.Stdout != string(c.res.Stdout) {
				t.Errorf("stdout %q, want %q", ce.Stdout, c.res.Stdout)
			}
		})
	}
}

func TestBound(t *testing.T) {
	short := "error: x"
	if got := bound(short); got != short {
		t.Errorf("bound(%q) = %q", short, got)
	}
	long := strings.Repeat("é", maxCompileOutput) // two bytes each
	got := bound(long[1:])
	if len(got) > maxCompileOutput+64 || !strings.HasSuffix(got, "(output truncated)") {
		t.Errorf("bound kept %d bytes, ending %q", len(got), got[len(got)-30:])
	}
	if !utf8.ValidString(strings.TrimPrefix(got, long[1:2])) {
		t.Error("bound cut a character in two")
	}
}

func FuzzBound(f *testing.F) {
	f.Add("error", 10)
	f.Add(strings.Repeat("日本", 20000), 3)
	f.Fuzz(func(t *testing.T, s string, repeat int) {
		s = strings.Repeat(s, max(1, min(repeat, 1<<17/max(1, len(s)))))
		got := bound(s)
		if len(s) <= maxCompileOutput && got != s {
			t.Fatalf("short output changed")
		}
		if len(got) > maxCompileOutput+len("\n... (output truncated)") {
			t.Fatalf("%d bytes kept", len(got))
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("valid UTF-8 became invalid")
		}
	})
}

// TestCopyOut plants what a hostile compile step could leave behind.
func TestCopyOut(t *testing.T) {
	ws, dst := t.TempDir(), t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	must(t, os.WriteFile(secret, []byte("host secret"), 0o600))
	must(t, os.WriteFile(filepath.Join(ws, "main"), []byte("binary"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "Main.class"), []byte("class"), 0o600))
	must(t, os.MkdirAll(filepath.Join(ws, "pkg", "sub"), 0o700))
	must(t, os.WriteFile(filepath.Join(ws, "pkg", "sub", "A.class"), []byte("a"), 0o644))
	must(t, os.Symlink(secret, filepath.Join(ws, "link")))
	must(t, os.Symlink(filepath.Dir(secret), filepath.Join(ws, "dirlink")))
	must(t, os.Symlink("../../../../etc/passwd", filepath.Join(ws, "pkg", "rel")))
	must(t, syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	must(t, os.MkdirAll(filepath.Join(ws, ".gocache"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, ".gocache", "big"), []byte("cache"), 0o644))

	done := make(chan error, 1)
	go func() { done <- copyOut(ws, dst, func(rel string) bool { return rel == ".gocache" }, artifactLimits) }()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("copyOut blocked (on the FIFO?)")
	}
	var got []string
	must(t, filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		info, _ := d.Info()
		got = append(got, rel+" "+info.Mode().String())
		return nil
	}))
	want := []string{
		". " + mustMode(t, dst),
		"Main.class -r--r--r--",
		"main -r-xr-xr-x",
		"pkg drwxr-xr-x",
		"pkg/sub drwxr-xr-x",
		"pkg/sub/A.class -r--r--r--",
	}
	if !slices.Equal(got, want) {
		t.Errorf("copied\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestCopyOutLimits(t *testing.T) {
	cases := []struct {
		name  string
		lim   copyLimits
		build func(ws string) error
	}{
		{"bytes", copyLimits{maxBytes: 10, maxFiles: 10, maxDepth: 4}, func(ws string) error {
			return os.WriteFile(filepath.Join(ws, "main"), make([]byte, 11), 0o644)
		}},
		{"bytes over files", copyLimits{maxBytes: 10, maxFiles: 10, maxDepth: 4}, func(ws string) error {
			for _, n := range []string{"a", "b", "c"} {
				if err := os.WriteFile(filepath.Join(ws, n), make([]byte, 4), 0o644); err != nil {
					return err
				}
			}
			return nil
		}},
		{"files", copyLimits{maxBytes: 1 << 20, maxFiles: 3, maxDepth: 4}, func(ws string) error {
			for i := range 4 {
				if err := os.WriteFile(filepath.Join(ws, string(rune('a'+i))), nil, 0o644); err != nil {
					return err
				}
			}
			return nil
		}},
		{"depth", copyLimits{maxBytes: 1 << 20, maxFiles: 100, maxDepth: 2}, func(ws string) error {
			return os.MkdirAll(filepath.Join(ws, "a", "b", "c", "d"), 0o755)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			must(t, c.build(ws))
			if err := copyOut(ws, t.TempDir(), nil, c.lim); !errors.Is(err, errTooLarge) {
				t.Errorf("copyOut: %v, want errTooLarge", err)
			}
		})
	}
}

// TestPrepareFake drives Prepare and Run with a fake compiler: no root
// needed.
func TestPrepareFake(t *testing.T) {
	be := compiler(func(spec *sandbox.Spec) error {
		if err := writeBinary(spec.Workspace); err != nil {
			return err
		}
		return os.Symlink("/etc/shadow", filepath.Join(spec.Workspace, "shadow"))
	})
	r := newFake(t, be, Options{})
	if tc := lookup(t, r, "c").Discover(context.Background()); !tc.Available {
		testutil.Require(t, false, "no C compiler here: "+tc.Reason)
	}
	p, err := r.PrepareProgram(context.Background(), "c", "int main(void) { return 0; }", judge.ProgramOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !p.Compiled() || p.Language() != "c" {
		t.Errorf("Compiled %v, Language %q", p.Compiled(), p.Language())
	}
	compile := be.Last()
	if compile.Workspace == "" || compile.Limits != r.CompileLimits() {
		t.Errorf("compile spec: workspace %q, limits %+v", compile.Workspace, compile.Limits)
	}
	if _, err := os.Stat(compile.Workspace); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("compile workspace %s left behind: %v", compile.Workspace, err)
	}
	if len(compile.Files) != 1 || compile.Files[0].Path != "main.c" {
		t.Errorf("compile files %+v", compile.Files)
	}

	spec := p.Spec([]byte("input"), sandbox.Limits{Memory: 16 * sandbox.MiB})
	if !slices.Equal(spec.Args, []string{path.Join(ProgramDir, "main")}) {
		t.Errorf("run argv %q", spec.Args)
	}
	if spec.Workspace != "" || len(spec.Files) != 0 || spec.Limits.Memory != 16*sandbox.MiB {
		t.Errorf("run spec: workspace %q, files %d, limits %+v", spec.Workspace, len(spec.Files), spec.Limits)
	}
	m := spec.Mounts[len(spec.Mounts)-1]
	if m.Target != ProgramDir || m.Writable {
		t.Fatalf("program mount %+v", m)
	}
	ents, err := os.ReadDir(m.Source)
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{sumFile, "main", "main.c"}) {
		t.Errorf("cache entry holds %q, want the binary, the source and the digest only", names)
	}
}

func TestPrepareFakeJava(t *testing.T) {
	be := compiler(func(spec *sandbox.Spec) error {
		return os.WriteFile(filepath.Join(spec.Workspace, "Hello.class"), []byte("\xca\xfe\xba\xbe"), 0o644)
	})
	r := newFake(t, be, Options{})
	if tc := lookup(t, r, "java").Discover(context.Background()); !tc.Available {
		testutil.Require(t, false, "no JDK here: "+tc.Reason)
	}
	p, err := r.PrepareProgram(context.Background(), "java", "public class Hello { public static void main(String[] a) {} }", judge.ProgramOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if src := be.Last().Files[0].Path; src != "Hello.java" {
		t.Errorf("source file %q, want Hello.java", src)
	}
	spec := p.Spec(nil, sandbox.Limits{Memory: 128 * sandbox.MiB, Processes: 10})
	args := strings.Join(spec.Args, " ")
	for _, w := range []string{"-Xmx88m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp " + ProgramDir, " Hello"} {
		if !strings.Contains(args, w) {
			t.Errorf("java argv %q lacks %q", args, w)
		}
	}
	if spec.Limits.Processes != 64 {
		t.Errorf("java processes %d, want raised to 64", spec.Limits.Processes)
	}
	if spec.Stdin != nil {
		t.Error("empty stdin should be /dev/null")
	}
	spec = p.Spec(nil, sandbox.Limits{Processes: 200})
	if spec.Limits.Processes != 200 {
		t.Errorf("java processes %d, want the caller's 200", spec.Limits.Processes)
	}
}

func TestPrepareFakeInterpreted(t *testing.T) {
	be := compiler(nil)
	r := newFake(t, be, Options{})
	if tc := lookup(t, r, "python").Discover(context.Background()); !tc.Available {
		testutil.Require(t, false, "no python here: "+tc.Reason)
	}
	p, err := r.PrepareProgram(context.Background(), "py", "print(1)", judge.ProgramOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if be.Runs() != 0 || p.Compiled() {
		t.Error("an interpreted program was compiled")
	}
	spec := p.Spec([]byte("x"), sandbox.Limits{})
	if len(spec.Files) != 1 || spec.Files[0].Path != "main.py" || string(spec.Files[0].Content) != "print(1)" {
		t.Errorf("files %+v", spec.Files)
	}
	if spec.Args[len(spec.Args)-1] != "/workspace/main.py" {
		t.Errorf("argv %q", spec.Args)
	}
}

func TestPrepareFakeNoProgram(t *testing.T) {
	r := newFake(t, compiler(nil), Options{})
	if tc := lookup(t, r, "c").Discover(context.Background()); !tc.Available {
		testutil.Require(t, false, "no C compiler here: "+tc.Reason)
	}
	_, err := r.Prepare(context.Background(), "c", "int main(void) { return 0; }", judge.ProgramOptions{})
	var ce *judge.CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Output, "no program") {
		t.Errorf("compiler that wrote nothing: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(r.CacheDir(), entriesDir))
	if len(ents) != 0 {
		t.Errorf("a failed compile left %d cache entries", len(ents))
	}
}

// imageBackend is a fake backend that runs each language in an image.
type imageBackend struct {
	*sandboxtest.Fake
	image string
}

func (b imageBackend) ImageFor(string) string { return b.image }

// TestCacheKeyedByImage shares one cache between backends whose compilers
// differ: a program compiled in one image must not be reused by a backend
// that compiles in another, and must be by one that compiles in the same.
func TestCacheKeyedByImage(t *testing.T) {
	dir := testutil.ReachableDir(t, "runner-internal-")
	code := "int main(void) { return 0; }"
	compiles := func(be sandbox.Backend, counter *sandboxtest.Fake) int64 {
		t.Helper()
		before := int64(counter.Runs())
		r := newFake(t, be, Options{CacheDir: dir})
		if tc := lookup(t, r, "c").Discover(context.Background()); !tc.Available {
			testutil.Require(t, false, "no C compiler here: "+tc.Reason)
		}
		p, err := r.PrepareProgram(context.Background(), "c", code, judge.ProgramOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = p.Close()
		return int64(counter.Runs()) - before
	}
	plant := func(spec *sandbox.Spec) error { return writeBinary(spec.Workspace) }
	host := compiler(plant)
	gcc12 := imageBackend{compiler(plant), "gcc:12"}
	gcc13 := imageBackend{compiler(plant), "gcc:13"}
	for _, step := range []struct {
		name    string
		be      sandbox.Backend
		counter *sandboxtest.Fake
		want    int64
	}{
		{"host compiles", host, host, 1},
		{"host again: cached", host, host, 0},
		{"image gcc:12 compiles", gcc12, gcc12.Fake, 1},
		{"image gcc:13 compiles", gcc13, gcc13.Fake, 1},
		{"image gcc:12 again: cached", gcc12, gcc12.Fake, 0},
	} {
		if got := compiles(step.be, step.counter); got != step.want {
			t.Errorf("%s: %d compiles, want %d", step.name, got, step.want)
		}
	}
}

func TestPrepareFakeFailure(t *testing.T) {
	be := &sandboxtest.Fake{Default: sandboxtest.Returns(sandbox.Result{Status: sandbox.StatusNonzeroExit, ExitCode: 1, Stderr: []byte("main.c:1: error")})}
	r := newFake(t, be, Options{})
	if tc := lookup(t, r, "c").Discover(context.Background()); !tc.Available {
		testutil.Require(t, false, "no C compiler here: "+tc.Reason)
	}
	for range 2 {
		_, err := r.Prepare(context.Background(), "c", "int main(void) { return x; }", judge.ProgramOptions{})
		var ce *judge.CompileError
		if !errors.As(err, &ce) || ce.Output != "main.c:1: error" {
			t.Fatalf("Prepare: %v", err)
		}
	}
	if be.Runs() != 2 {
		t.Errorf("%d compiles; failures are not cached, want 2", be.Runs())
	}
}

func TestNewOptions(t *testing.T) {
	if _, err := New(nil, lang.Default(), Options{}); err == nil {
		t.Error("New without a backend succeeded")
	}
	if _, err := New(compiler(nil), nil, Options{}); err == nil {
		t.Error("New without a table succeeded")
	}
	if _, err := New(compiler(nil), lang.Default(), Options{CacheDir: t.TempDir(), CacheMaxBytes: -1}); err == nil {
		t.Error("negative CacheMaxBytes accepted")
	}
	if _, err := New(compiler(nil), lang.Default(), Options{CacheDir: t.TempDir(), CompileLimits: sandbox.Limits{Memory: 1}}); err == nil {
		t.Error("a 1-byte compile memory limit accepted")
	}
	r := newFake(t, compiler(nil), Options{CompileLimits: sandbox.Limits{WallTime: 5 * time.Second}})
	cl := r.CompileLimits()
	if cl.WallTime != 5*time.Second || cl.Memory != 512*sandbox.MiB || cl.CPUs <= 0 || cl.Processes != 256 {
		t.Errorf("compile limits %+v", cl)
	}
}

func TestRemoveStale(t *testing.T) {
	dir := testutil.ReachableDir(t, "runner-internal-")
	r := newFake(t, compiler(nil), Options{CacheDir: dir})
	old := filepath.Join(dir, tmpDir, "compile-old")
	fresh := filepath.Join(dir, tmpDir, "compile-fresh")
	must(t, os.MkdirAll(filepath.Join(old, "x"), 0o755))
	must(t, os.MkdirAll(fresh, 0o755))
	past := time.Now().Add(-2 * staleAge)
	must(t, os.Chtimes(old, past, past))
	r.cache.removeStale()
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale directory kept: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh directory removed: %v", err)
	}
}

func lookup(t *testing.T, r *Runner, id string) *lang.Language {
	t.Helper()
	l, err := r.langs.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustMode(t *testing.T, p string) string {
	t.Helper()
	fi, err := os.Stat(p)
	must(t, err)
	return fi.Mode().String()
}

// TestGoSeed checks that the first Go compile builds the seed once and
// that every compile starts from a private copy of it.
func TestGoSeed(t *testing.T) {
	var seeded []string
	be := compiler(func(spec *sandbox.Spec) error {
		cache := filepath.Join(spec.Workspace, goCacheDir)
		if strings.Contains(string(spec.Files[0].Content), "seed") {
			if err := os.MkdirAll(filepath.Join(cache, "ab"), 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(cache, "ab", "abcd-d"), []byte("fmt.a"), 0o644)
		}
		b, err := os.ReadFile(filepath.Join(cache, "ab", "abcd-d"))
		if err != nil {
			return err
		}
		seeded = append(seeded, string(b))
		if env := strings.Join(spec.Env, " "); !strings.Contains(env, "GOCACHE=/workspace/.gocache") {
			return errors.New("GOCACHE not in the workspace: " + env)
		}
		if err := os.WriteFile(filepath.Join(cache, "ab", "new-d"), []byte("main.a"), 0o644); err != nil {
			return err
		}
		return writeBinary(spec.Workspace)
	})
	r := newFake(t, be, Options{})
	if tc := lookup(t, r, "go").Discover(context.Background()); !tc.Available {
		testutil.Require(t, false, "no Go toolchain here: "+tc.Reason)
	}
	for i := range 2 {
		p, err := r.PrepareProgram(context.Background(), "go", fmt.Sprintf("package main\n\nfunc main() { println(%d) }\n", i), judge.ProgramOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(p.entry.dir)
		must(t, err)
		for _, e := range ents {
			if e.Name() == goCacheDir {
				t.Error("the build cache was stored with the program")
			}
		}
		p.Close()
	}
	if n := be.Runs(); n != 3 {
		t.Errorf("%d sandbox runs, want 3: the seed once, then two compiles", n)
	}
	if !slices.Equal(seeded, []string{"fmt.a", "fmt.a"}) {
		t.Errorf("compiles saw %q in their cache, want the seed's file twice", seeded)
	}
	seeds, _ := filepath.Glob(filepath.Join(r.CacheDir(), "go-seed-go*"))
	if len(seeds) != 1 {
		t.Fatalf("seeds %q, want one", seeds)
	}
	if _, err := os.Stat(filepath.Join(seeds[0], "ab", "new-d")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a compile wrote into the seed: %v", err)
	}
}

// TestCompileWorkspaceCapped attacks the compile step's workspace: it must
// be a tmpfs capped at the compile limits' workspace size while the
// compiler runs (a write past the cap fails with ENOSPC, nothing reaches
// the cache's disk), and be gone once the program is cached.
func TestCompileWorkspaceCapped(t *testing.T) {
	testutil.RequireRoot(t)
	const size = 8 << 20
	var fillErr error
	be := compiler(func(spec *sandbox.Spec) error {
		if err := capws.Check(spec.Workspace, size); err != nil {
			return err
		}
		f, err := os.Create(filepath.Join(spec.Workspace, "fill"))
		if err != nil {
			return err
		}
		fillErr = unix.Fallocate(int(f.Fd()), 0, 0, 64<<20)
		_ = f.Close()
		if err := os.Remove(f.Name()); err != nil {
			return err
		}
		return writeBinary(spec.Workspace)
	})
	r := newFake(t, be, Options{CompileLimits: sandbox.Limits{WorkspaceSize: size}})
	if tc := lookup(t, r, "c").Discover(context.Background()); !tc.Available {
		testutil.Require(t, false, "no C compiler here: "+tc.Reason)
	}
	p, err := r.PrepareProgram(context.Background(), "c", "int main(void) { return 0; }", judge.ProgramOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !errors.Is(fillErr, unix.ENOSPC) {
		t.Errorf("fallocate of 64 MiB in an 8 MiB compile workspace: %v, want ENOSPC", fillErr)
	}
	if ws := be.Last().Workspace; ws != "" {
		if _, err := os.Lstat(ws); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("compile workspace %s left behind: %v", ws, err)
		}
	}
}
