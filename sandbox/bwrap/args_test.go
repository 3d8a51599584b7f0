package bwrap

import (
	"slices"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/sandbox"
)

func testPlan() *plan {
	return &plan{
		spec: &sandbox.Spec{
			Args:   []string{"/usr/bin/python3", "main.py"},
			Env:    []string{"PATH=/usr/bin:/bin", "A=b=c"},
			Mounts: []sandbox.Mount{{Source: "/usr"}, {Source: "/lib"}, {Source: "/srv/jdk", Target: "/opt/jdk"}, {Source: "/etc/java-17-openjdk"}},
			Files:  []sandbox.File{{Path: "main.py", Content: []byte("x")}, {Path: "pkg/sub/m.py", Mode: 0o755}},
			Limits: sandbox.Limits{}.WithDefaults(),
		},
		uid: 1000, etcDir: "/run/x/etc", ldCache: true, alternatives: "/etc/alternatives",
		fileFDs:   []int{6, 7},
		seccompFD: 3, statusFD: 4, blockFD: 5,
		link: func(s string) (string, bool, error) {
			if s == "/lib" {
				return "usr/lib", true, nil
			}
			return "", false, nil
		},
	}
}

// index finds the position of a run of arguments.
func index(args []string, run ...string) int {
	for i := range args {
		if i+len(run) <= len(args) && slices.Equal(args[i:i+len(run)], run) {
			return i
		}
	}
	return -1
}

func TestArgs(t *testing.T) {
	args, err := testPlan().args()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		run  []string
	}{
		{"every namespace, no capability", []string{"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"}},
		{"user namespace uid", []string{"--unshare-user", "--uid", "1000", "--gid", "1000"}},
		{"read-only /usr", []string{"--ro-bind", "/usr", "/usr"}},
		{"/lib link", []string{"--symlink", "usr/lib", "/lib"}},
		{"toolchain at its neutral path", []string{"--ro-bind", "/srv/jdk", "/opt/jdk"}},
		{"own passwd", []string{"--ro-bind", "/run/x/etc/passwd", "/etc/passwd"}},
		{"host alternatives read-only", []string{"--ro-bind", "/etc/alternatives", "/etc/alternatives"}},
		{"fresh proc and dev", []string{"--dev", "/dev", "--proc", "/proc"}},
		{"hidden init", []string{"--perms", "0555", "--size", "4096", "--tmpfs", "/proc/1"}},
		{"capped tmp", []string{"--perms", "1777", "--size", "67108864", "--tmpfs", "/tmp"}},
		{"capped workspace", []string{"--perms", "0755", "--size", "268435456", "--tmpfs", "/workspace"}},
		{"parent directories", []string{"--perms", "0755", "--dir", "/workspace/pkg"}},
		{"file with its mode", []string{"--perms", "0755", "--file", "7", "/workspace/pkg/sub/m.py"}},
		{"default file mode", []string{"--perms", "0644", "--file", "6", "/workspace/main.py"}},
		{"read-only root", []string{"--remount-ro", "/"}},
		{"clean environment", []string{"--chdir", "/workspace", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "A", "b=c"}},
		{"filter and handshake", []string{"--seccomp", "3", "--json-status-fd", "4", "--block-fd", "5", "--", "/usr/bin/python3", "main.py"}},
	} {
		if index(args, tc.run...) < 0 {
			t.Errorf("%s: %q missing from\n%s", tc.name, tc.run, strings.Join(args, " "))
		}
	}
	// Order matters: /etc before the mounts below it, directories before
	// their files, the read-only remounts after everything.
	before := func(a, b []string) {
		t.Helper()
		if ia, ib := index(args, a...), index(args, b...); ia < 0 || ib < 0 || ia > ib {
			t.Errorf("%q must come before %q", a, b)
		}
	}
	before([]string{"--tmpfs", "/etc"}, []string{"--ro-bind", "/etc/java-17-openjdk", "/etc/java-17-openjdk"})
	before([]string{"--tmpfs", "/etc"}, []string{"--ro-bind", "/etc/alternatives", "/etc/alternatives"})
	before([]string{"--dir", "/workspace/pkg"}, []string{"--dir", "/workspace/pkg/sub"})
	before([]string{"--dir", "/workspace/pkg/sub"}, []string{"--file", "7", "/workspace/pkg/sub/m.py"})
	before([]string{"--file", "7", "/workspace/pkg/sub/m.py"}, []string{"--remount-ro", "/"})
	if args[len(args)-3] != "--" {
		t.Errorf("the program does not follow --: %q", args[len(args)-4:])
	}
}

func TestArgsHostScratch(t *testing.T) {
	p := testPlan()
	p.workspace, p.tmp, p.shm, p.fileFDs = "/run/x/run-1/workspace", "/run/x/run-1/tmp", "/run/x/run-1/shm", nil
	args, err := p.args()
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range [][]string{
		{"--bind", "/run/x/run-1/workspace", "/workspace"},
		{"--bind", "/run/x/run-1/tmp", "/tmp"},
		{"--bind", "/run/x/run-1/shm", "/dev/shm"},
	} {
		if index(args, run...) < 0 {
			t.Errorf("%q missing", run)
		}
	}
	if index(args, "--file") >= 0 {
		t.Error("files are passed to bwrap though the backend wrote them")
	}
	p.spec.Workspace = "/srv/session"
	args, _ = p.args()
	if index(args, "--bind", "/srv/session", "/workspace") < 0 {
		t.Error("a host workspace is not bound read-write")
	}
}

// A host without /etc/alternatives gives the sandbox none.
func TestArgsNoAlternatives(t *testing.T) {
	p := testPlan()
	p.alternatives = ""
	args, err := p.args()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(args, "/etc/alternatives") {
		t.Fatalf("/etc/alternatives bound from nowhere: %q", args)
	}
}

func TestArgsFileCountMismatch(t *testing.T) {
	p := testPlan()
	p.fileFDs = p.fileFDs[:1]
	if _, err := p.args(); err == nil {
		t.Fatal("one descriptor for two files was accepted")
	}
	p = testPlan()
	p.spec.TmpFiles = []sandbox.File{{Path: "a"}}
	if _, err := p.args(); err == nil {
		t.Fatal("no descriptor for a file of /tmp was accepted")
	}
}

// A spec's files of /tmp: copied in by bwrap after it made /tmp (and
// before the read-only remounts), or, where the backend made /tmp on the
// host and wrote them there, not passed at all.
func TestArgsTmpFiles(t *testing.T) {
	p := testPlan()
	p.spec.TmpFiles = []sandbox.File{{Path: "matplotlib/fontlist.json"}}
	p.tmpFDs = []int{8}
	args, err := p.args()
	if err != nil {
		t.Fatal(err)
	}
	tmp := []string{"--tmpfs", "/tmp"}
	dir := []string{"--perms", "0755", "--dir", "/tmp/matplotlib"}
	file := []string{"--perms", "0644", "--file", "8", "/tmp/matplotlib/fontlist.json"}
	for _, pair := range [][2][]string{{tmp, dir}, {dir, file}, {file, {"--remount-ro", "/"}}} {
		if ia, ib := index(args, pair[0]...), index(args, pair[1]...); ia < 0 || ib < 0 || ia > ib {
			t.Errorf("%q must come before %q in\n%s", pair[0], pair[1], strings.Join(args, " "))
		}
	}
	p.tmp, p.tmpFDs = "/run/x/run-1/tmp", nil
	if args, _ = p.args(); index(args, "/tmp/matplotlib/fontlist.json") >= 0 {
		t.Errorf("a file of /tmp is passed to bwrap though the backend wrote it: %q", args)
	}
}

func TestParseInfo(t *testing.T) {
	for _, tc := range []struct {
		in   string
		pid  int
		fail bool
	}{
		{`{"child-pid": 4242, "pid-namespace": 1}`, 4242, false},
		{"{\n    \"child-pid\": 7\n}\n", 7, false},
		{`{"child-pid": 1}`, 0, true},
		{`{"child-pid": -3}`, 0, true},
		{`{}`, 0, true},
		{`{"child-pid": "12"}`, 0, true},
		{`not json`, 0, true},
	} {
		pid, err := parseInfo([]byte(tc.in))
		if (err != nil) != tc.fail || pid != tc.pid {
			t.Errorf("parseInfo(%q) = %d, %v", tc.in, pid, err)
		}
	}
}

func FuzzParseInfo(f *testing.F) {
	for _, s := range []string{`{"child-pid": 4242}`, `{}`, `{"child-pid": 0}`, `[]`, `{"child-pid": 1e3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pid, err := parseInfo(data)
		if err == nil && pid <= 1 {
			t.Fatalf("parseInfo(%q) accepted pid %d", data, pid)
		}
	})
}

func TestTooOld(t *testing.T) {
	for _, tc := range []struct {
		version string
		old     bool
	}{
		{"bubblewrap 0.8.0", false},
		{"bubblewrap 0.5.0", false},
		{"bubblewrap 0.11.0", false},
		{"bubblewrap 1.0", false},
		{"bubblewrap 0.4.1", true},
		{"bubblewrap 0.3.3", true},
		{"", false},
		{"bubblewrap", false},
		{"bubblewrap x.y", false},
	} {
		if got := tooOld(tc.version); got != tc.old {
			t.Errorf("tooOld(%q) = %v, want %v", tc.version, got, tc.old)
		}
	}
}
