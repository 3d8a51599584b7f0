package lang

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
)

// hostPath maps a sandbox path back to the host through the mounts.
func hostPath(mounts []sandbox.Mount, p string) (string, bool) {
	best := -1
	for i, m := range mounts {
		if under(p, m.TargetPath()) && (best < 0 || len(m.TargetPath()) > len(mounts[best].TargetPath())) {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	m := mounts[best]
	return m.Source + strings.TrimPrefix(p, m.TargetPath()), true
}

func TestDiscoverHost(t *testing.T) {
	wantMount := map[string]string{"java": "/opt/jdk", "go": "/opt/go", "rust": "/opt/rust"}
	for _, l := range Default().All() {
		t.Run(l.ID, func(t *testing.T) {
			tc := l.Discover(context.Background())
			testutil.Require(t, tc.Available, l.ID+" toolchain: "+tc.Reason)
			if tc.Version == "" || tc.Reason != "" {
				t.Errorf("toolchain %+v: want a version and no reason", tc)
			}
			argv := l.RunArgs(Vars{})
			if l.Compiled {
				argv = l.CompileArgs(Vars{})
			}
			host, ok := hostPath(l.Mounts, argv[0])
			if !ok {
				t.Fatalf("argv[0] %q is under no mount %v", argv[0], l.Mounts)
			}
			if err := realBinary(host); err != nil {
				t.Errorf("argv[0] %q (host %s) %v", argv[0], host, err)
			}
			for _, m := range l.Mounts {
				tgt := m.TargetPath()
				if m.Writable {
					t.Errorf("mount %+v is writable", m)
				}
				if under(tgt, "/root") || under(tgt, "/home") {
					t.Errorf("mount %+v exposes a home directory", m)
				}
				if (under(m.Source, "/root") || under(m.Source, "/home")) && !under(tgt, "/opt") {
					t.Errorf("mount %+v: a toolchain under a home directory must be at a neutral path", m)
				}
			}
			if want := wantMount[l.ID]; want != "" {
				if !slices.ContainsFunc(l.Mounts, func(m sandbox.Mount) bool { return m.Target == want }) {
					t.Errorf("no toolchain mount at %s in %v", want, l.Mounts)
				}
			}
			if !slices.ContainsFunc(l.Mounts, func(m sandbox.Mount) bool { return m.Source == "/usr" }) {
				t.Errorf("no /usr base mount in %v", l.Mounts)
			}
			if !slices.ContainsFunc(l.Env, func(e string) bool { return strings.HasPrefix(e, "PATH=/") }) {
				t.Errorf("env %v has no PATH", l.Env)
			}
			for _, e := range l.Env {
				if strings.Contains(e, "{") {
					t.Errorf("env %q has an unexpanded placeholder", e)
				}
			}
			// A second call is the cached answer.
			if again := l.Discover(context.Background()); again != tc {
				t.Errorf("second Discover = %+v, first %+v", again, tc)
			}
		})
	}
}

// TestDiscoverRustSysroot checks that the rust toolchain is the real one
// behind a rustup proxy, mounted away from any home directory.
func TestDiscoverRustSysroot(t *testing.T) {
	rust, _ := Default().Lookup("rust")
	tc := rust.Discover(context.Background())
	testutil.Require(t, tc.Available, "rust toolchain: "+tc.Reason)
	if got := rust.CompileArgs(Vars{})[0]; got != "/opt/rust/bin/rustc" {
		t.Errorf("rustc in the sandbox is %q, want /opt/rust/bin/rustc", got)
	}
}

func TestDiscoverPython(t *testing.T) {
	py, _ := Default().Lookup("python3")
	tc := py.Discover(context.Background())
	testutil.Require(t, tc.Available, "python3: "+tc.Reason)
	if got := py.RunArgs(Vars{})[0]; !strings.HasPrefix(got, "/usr/") {
		t.Errorf("python3 in the sandbox is %q, want the real binary under /usr", got)
	}
}

// newTestLanguage builds a one-language table whose discovery sees path
// as the host PATH.
func newTestLanguage(t *testing.T, r Recipe, path string) *Language {
	t.Helper()
	tab, err := New(map[string]Recipe{"probe": r})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := tab.Lookup("probe")
	l.getenv = func(k string) string {
		if k == "PATH" {
			return path
		}
		return ""
	}
	return l
}

func writeFile(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func TestDiscoverRejectsShim(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 to fall back to")
	}
	shims := t.TempDir()
	writeFile(t, filepath.Join(shims, "python3"), "#!/usr/bin/env bash\nexec pyenv exec python3 \"$@\"\n", 0o755)
	noexec := t.TempDir()
	writeFile(t, filepath.Join(noexec, "python3"), "\x7fELF", 0o644)
	r := Recipe{Source: "main.py", Run: []string{"{tool}", "{source}"}, Toolchain: Discovery{Program: "python3"}}
	tests := []struct {
		name, path string
		avail      bool
		reason     string
	}{
		{"shim only", shims, false, "python3 at " + shims + "/python3 is a script, not a real binary"},
		{"not executable", noexec, false, "is not executable"},
		{"nothing", t.TempDir(), false, "python3 not found"},
		{"relative PATH entry ignored", "relative/dir", false, "python3 not found"},
		{"shim then real", shims + ":/usr/bin", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := r
			r.Source = "m" + strings.ReplaceAll(tt.name, " ", "") + ".py" // a distinct cache key
			l := newTestLanguage(t, r, tt.path)
			tc := l.Discover(context.Background())
			if tc.Available != tt.avail || !strings.Contains(tc.Reason, tt.reason) {
				t.Fatalf("Discover = %+v, want available %v and reason containing %q", tc, tt.avail, tt.reason)
			}
			if tt.avail {
				if got := l.RunArgs(Vars{})[0]; strings.HasPrefix(got, shims) || !strings.HasPrefix(got, "/usr/bin/python3") {
					t.Errorf("tool %q, want the real /usr/bin/python3", got)
				}
			}
		})
	}
}

func TestDiscoverReasons(t *testing.T) {
	outside := t.TempDir()
	elf, err := os.ReadFile("/usr/bin/true")
	if err != nil {
		t.Skip("no /usr/bin/true")
	}
	writeFile(t, filepath.Join(outside, "mytool"), string(elf), 0o755)
	base := Recipe{Source: "a", Run: []string{"{tool}"}, Toolchain: Discovery{Paths: []string{"/usr/bin/true"}}}
	tests := []struct {
		name   string
		edit   func(*Recipe)
		reason string
	}{
		{"missing requirement", func(r *Recipe) { r.Toolchain.Requires = []string{"/nonexistent/cc"} }, "needs /nonexistent/cc"},
		{"failing version", func(r *Recipe) { r.Version = []string{"/usr/bin/false"} }, "version check /usr/bin/false failed"},
		{"not visible", func(r *Recipe) { r.Toolchain.Paths = []string{filepath.Join(outside, "mytool")} }, "is not visible in the sandbox"},
		{"missing mount source", func(r *Recipe) { r.Mounts = []RecipeMount{{Source: "/nonexistent", Target: "/opt/x"}} }, "mount source"},
		{"bad root command", func(r *Recipe) {
			r.Toolchain.RootCommand, r.Toolchain.Tool, r.Toolchain.Mount = []string{"/usr/bin/echo", "relative"}, "bin/x", "/opt/x"
		}, `printed "relative", not an absolute path`},
		{"tool outside root", func(r *Recipe) { r.Toolchain.RootUp, r.Toolchain.Mount = 1, "/opt/x"; r.Toolchain.Tool = "nonexistent" }, "nonexistent not found in the toolchain root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			r.Source = strings.ReplaceAll(tt.name, " ", "_")
			tt.edit(&r)
			tc := newTestLanguage(t, r, "").Discover(context.Background())
			if tc.Available || !strings.Contains(tc.Reason, tt.reason) {
				t.Fatalf("Discover = %+v, want unavailable with %q", tc, tt.reason)
			}
		})
	}
}

// TestDiscoverOnce counts the runs of a version command across tables and
// goroutines: a process discovers a toolchain once.
func TestDiscoverOnce(t *testing.T) {
	count := filepath.Join(t.TempDir(), "count")
	r := Recipe{
		Source:    "a",
		Run:       []string{"{tool}"},
		Version:   []string{"/usr/bin/bash", "-c", "echo run >> " + count + "; echo v1"},
		Toolchain: Discovery{Paths: []string{"/usr/bin/bash"}},
	}
	var wg sync.WaitGroup
	for range 8 {
		l := newTestLanguage(t, r, "")
		wg.Add(1)
		go func() {
			defer wg.Done()
			if tc := l.Discover(context.Background()); tc.Version != "v1" {
				t.Errorf("Discover = %+v", tc)
			}
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(count)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "run"); n != 1 {
		t.Errorf("version command ran %d times, want 1", n)
	}
}

func TestLinkedDirs(t *testing.T) {
	root, ext := t.TempDir(), t.TempDir()
	for _, d := range []string{"conf/security", "lib"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(ext, "cfg", "security"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ext, "cfg", "jvm.cfg"), "x", 0o644)
	writeFile(t, filepath.Join(ext, "cfg", "security", "java.security"), "x", 0o644)
	writeFile(t, filepath.Join(root, "lib", "inside"), "x", 0o644)
	links := map[string]string{
		"lib/jvm.cfg":                 filepath.Join(ext, "cfg", "jvm.cfg"),
		"conf/security/java.security": filepath.Join(ext, "cfg", "security", "java.security"),
		"lib/dangling":                filepath.Join(ext, "nothing", "here"),
		"lib/visible":                 "/usr/bin/true",
		"lib/self":                    filepath.Join(root, "lib", "inside"),
		"lib/relative":                "../../elsewhere",
		"lib/home":                    "/root/.bashrc",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	visible := func(p string) bool { return under(p, "/usr") }
	got := linkedDirs(root, visible)
	want := []string{filepath.Join(ext, "cfg")}
	if !slices.Equal(got, want) {
		t.Errorf("linkedDirs = %v, want %v", got, want)
	}
}
