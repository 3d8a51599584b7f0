package docker

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/seccomp"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

func TestProfile(t *testing.T) {
	p, err := NewProfile()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Architectures) != 1 || p.DefaultAction != "SCMP_ACT_ALLOW" {
		t.Fatalf("architectures %v default %s: want only the native ABI", p.Architectures, p.DefaultAction)
	}
	errno := func(r SyscallRule) uint {
		if r.ErrnoRet == nil {
			return 0
		}
		return *r.ErrnoRet
	}
	denied := map[string]bool{}
	cloneFlags := map[uint64]bool{}
	ioctls := map[uint64]bool{}
	for _, r := range p.Syscalls {
		if r.Action != "SCMP_ACT_ERRNO" {
			t.Errorf("rule %v allows or kills; the profile only refuses", r.Names)
		}
		switch {
		case len(r.Args) == 0 && errno(r) == uint(unix.EPERM):
			for _, n := range r.Names {
				denied[n] = true
			}
		case slices.Equal(r.Names, []string{"clone"}):
			cloneFlags[r.Args[0].Value] = true
		case slices.Equal(r.Names, []string{"ioctl"}):
			ioctls[r.Args[0].ValueTwo] = true
		}
	}
	for _, n := range seccomp.DeniedSyscalls() {
		if !denied[n] {
			t.Errorf("%s is denied by the native filter but not by the profile", n)
		}
	}
	for _, n := range []string{"io_uring_setup", "bpf", "unshare", "syslog", "ptrace", "mount"} {
		if !denied[n] {
			t.Errorf("%s is not denied", n)
		}
	}
	for _, f := range cloneNamespaceFlags {
		if !cloneFlags[f] {
			t.Errorf("clone flag %#x not refused", f)
		}
	}
	if !ioctls[unix.TIOCSTI] || !ioctls[unix.TIOCLINUX] {
		t.Errorf("ioctl rules %v, want TIOCSTI and TIOCLINUX refused", ioctls)
	}
	js, err := profileJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Profile
	if err := json.Unmarshal([]byte(js), &back); err != nil || len(back.Syscalls) != len(p.Syscalls) {
		t.Fatalf("the JSON profile does not read back: %v", err)
	}
}

// verdict evaluates the profile for one call the way the engine's runtime
// does: a rule applies when the name matches and every argument condition
// holds, rules are ORed, and the default applies when none does. Rules that
// apply must agree, or the outcome would depend on the runtime.
func verdict(t *testing.T, p *Profile, name string, args [6]uint64) (action string, errno uint) {
	t.Helper()
	action = p.DefaultAction
	matched := false
	for _, r := range p.Syscalls {
		if !slices.Contains(r.Names, name) {
			continue
		}
		holds := true
		for _, a := range r.Args {
			v := args[a.Index]
			switch a.Op {
			case "SCMP_CMP_EQ":
				holds = holds && v == a.Value
			case "SCMP_CMP_GT":
				holds = holds && v > a.Value
			case "SCMP_CMP_MASKED_EQ":
				holds = holds && v&a.Value == a.ValueTwo
			default:
				t.Fatalf("rule %v: operator %s not modelled", r.Names, a.Op)
			}
		}
		if !holds {
			continue
		}
		var e uint
		if r.ErrnoRet != nil {
			e = *r.ErrnoRet
		}
		if matched && (r.Action != action || e != errno) {
			t.Fatalf("%s%v: rules disagree: %s/%d and %s/%d", name, args, action, errno, r.Action, e)
		}
		matched, action, errno = true, r.Action, e
	}
	return action, errno
}

// TestProfileSocketFamilies checks that the profile admits exactly the
// native policy's address families for socket and socketpair, whatever the
// other arguments, and refuses every other with EAFNOSUPPORT.
func TestProfileSocketFamilies(t *testing.T) {
	p, err := NewProfile()
	if err != nil {
		t.Fatal(err)
	}
	allowed := seccomp.SocketFamilies()
	if !slices.Equal(allowed, []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6}) {
		t.Fatalf("policy allows families %v, want AF_UNIX, AF_INET, AF_INET6", allowed)
	}
	var families []uint64
	for f := range uint64(300) {
		families = append(families, f)
	}
	families = append(families, 0x7fffffff, 0x80000000, 0xffffffff, ^uint64(0),
		1<<32|unix.AF_VSOCK, 1<<32|unix.AF_NETLINK, 0xffffffff00000000|unix.AF_ALG,
		1<<32|unix.AF_UNIX, 1<<32|unix.AF_INET, 1<<63|unix.AF_INET6)
	for _, name := range []string{"socket", "socketpair"} {
		for _, fam := range families {
			for _, rest := range [][5]uint64{{unix.SOCK_STREAM, 0}, {unix.SOCK_RAW, 255, 0x7ffc0000}, {^uint64(0), ^uint64(0)}} {
				args := [6]uint64{fam, rest[0], rest[1], rest[2]}
				action, errno := verdict(t, p, name, args)
				// The native filter reads the low word; the profile
				// admits only a clean value, and refuses at least all the
				// native filter refuses.
				want := "SCMP_ACT_ALLOW"
				if !slices.Contains(allowed, uint32(fam)) || fam>>32 != 0 {
					want = "SCMP_ACT_ERRNO"
				}
				if action != want || (want == "SCMP_ACT_ERRNO" && errno != uint(unix.EAFNOSUPPORT)) {
					t.Errorf("%s(%#x, %#x): %s errno %d, want %s", name, fam, rest[:2], action, errno, want)
				}
			}
		}
	}
	// Other calls are not touched by the family rules.
	if action, _ := verdict(t, p, "connect", [6]uint64{3, 0, 16}); action != "SCMP_ACT_ALLOW" {
		t.Errorf("connect: %s, want allowed", action)
	}
}

func TestImageForSpec(t *testing.T) {
	m := newImages(lang.Default(), "")
	img := func(id string) string {
		l, err := lang.Default().Lookup(id)
		if err != nil {
			t.Fatal(err)
		}
		return l.Image
	}
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"python by its versioned binary", []string{"/usr/bin/python3.11", "-B", "main.py"}, nil, img("python")},
		{"python by its path", []string{"/usr/bin/python3"}, nil, img("python")},
		{"java by its mount", []string{"/opt/jdk/bin/java", "-cp", "/opt/program", "Main"}, nil, img("java")},
		{"javac", []string{"/opt/jdk/bin/javac"}, nil, img("java")},
		{"rustc", []string{"/opt/rust/bin/rustc"}, nil, img("rust")},
		{"node", []string{"/usr/bin/node", "main.js"}, nil, img("javascript")},
		{"gcc", []string{"/usr/bin/gcc"}, nil, img("c")},
		{"g++", []string{"/usr/bin/g++"}, nil, img("cpp")},
		{"a go binary", []string{"/opt/program/main"}, []string{"PATH=/opt/go/bin:/usr/bin:/bin", "GOROOT=/opt/go",
			"GOCACHE=/tmp/gocache", "GOPATH=/tmp/gopath", "GOTOOLCHAIN=local", "GOENV=off", "CGO_ENABLED=0", "XDG_CONFIG_HOME=/tmp/.config", "HOME=/workspace"}, img("go")},
		{"a rust binary", []string{"/opt/program/main"}, []string{"PATH=/opt/rust/bin:/usr/bin:/bin"}, img("rust")},
		{"a c binary", []string{"/workspace/main"}, []string{"PATH=/usr/bin:/bin"}, img("c")},
		{"a shell", []string{"/bin/sh", "-c", "true"}, nil, img("bash")},
		{"an unknown binary", []string{"/workspace/probe"}, []string{"PATH=/usr/local/bin"}, img("bash")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := m.forSpec(&sandbox.Spec{Args: tc.args, Env: tc.env})
			if got != tc.want {
				t.Fatalf("image %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSpecKey(t *testing.T) {
	base := func() *sandbox.Spec {
		return &sandbox.Spec{
			Args:   []string{"/usr/bin/python3", "main.py"},
			Files:  []sandbox.File{{Path: "main.py", Content: []byte("print(1)")}},
			Limits: sandbox.Limits{}.WithDefaults(),
		}
	}
	k := specKey(base(), "img")
	for _, tc := range []struct {
		name string
		edit func(*sandbox.Spec)
		same bool
	}{
		{"stdin", func(s *sandbox.Spec) { s.Stdin = strings.NewReader("x") }, true},
		{"wall time", func(s *sandbox.Spec) { s.Limits.WallTime *= 2 }, true},
		{"processes", func(s *sandbox.Spec) { s.Limits.Processes++ }, true},
		{"code", func(s *sandbox.Spec) { s.Files[0].Content = []byte("print(2)") }, false},
		{"file mode", func(s *sandbox.Spec) { s.Files[0].Mode = 0o755 }, false},
		{"args", func(s *sandbox.Spec) { s.Args = append(s.Args, "x") }, false},
		{"env", func(s *sandbox.Spec) { s.Env = []string{"A=b"} }, false},
		{"mounts", func(s *sandbox.Spec) { s.Mounts = []sandbox.Mount{{Source: "/srv"}} }, false},
		{"tmp size", func(s *sandbox.Spec) { s.Limits.TmpSize *= 2 }, false},
		{"file size", func(s *sandbox.Spec) { s.Limits.FileSize /= 2 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.edit(s)
			if got := specKey(s, "img") == k; got != tc.same {
				t.Fatalf("same key %v, want %v", got, tc.same)
			}
		})
	}
	if specKey(base(), "other") == k {
		t.Fatal("the image is not part of the key")
	}
}

// TestPoolKey: warm containers are shared by runs that differ only in
// what is put in at take time (program, files, environment, workspace,
// memory, CPU, processes), never by runs whose container settings
// differ; a run needing a mount the image lacks has no pool.
func TestPoolKey(t *testing.T) {
	tbl, err := lang.New(map[string]lang.Recipe{"python": {Image: "img"}})
	if err != nil {
		t.Fatal(err)
	}
	b := &Backend{images: newImages(tbl, "img")}
	base := func() *sandbox.Spec {
		return &sandbox.Spec{
			Args:   []string{"/usr/bin/python3", "main.py"},
			Files:  []sandbox.File{{Path: "main.py", Content: []byte("print(1)")}},
			Mounts: []sandbox.Mount{{Source: "/usr", Target: "/usr"}},
			Limits: sandbox.Limits{}.WithDefaults(),
		}
	}
	k, ok := b.poolKey(base(), "img")
	if !ok {
		t.Fatal("a run with the image's own mounts has no pool")
	}
	for _, tc := range []struct {
		name string
		edit func(*sandbox.Spec)
		same bool
	}{
		{"code", func(s *sandbox.Spec) { s.Files[0].Content = []byte("print(2)") }, true},
		{"args", func(s *sandbox.Spec) { s.Args = append(s.Args, "x") }, true},
		{"env", func(s *sandbox.Spec) { s.Env = []string{"A=b"} }, true},
		{"workspace", func(s *sandbox.Spec) { s.Workspace = "/srv/ws" }, true},
		{"workspace size", func(s *sandbox.Spec) { s.Limits.WorkspaceSize *= 2 }, true},
		{"memory, above the stack cap", func(s *sandbox.Spec) { s.Limits.Memory = 512 * sandbox.MiB }, true},
		{"cpus", func(s *sandbox.Spec) { s.Limits.CPUs *= 2 }, true},
		{"processes", func(s *sandbox.Spec) { s.Limits.Processes++ }, true},
		{"tmp size", func(s *sandbox.Spec) { s.Limits.TmpSize *= 2 }, false},
		{"file size", func(s *sandbox.Spec) { s.Limits.FileSize /= 2 }, false},
		{"open files", func(s *sandbox.Spec) { s.Limits.OpenFiles++ }, false},
		{"stack (memory)", func(s *sandbox.Spec) { s.Limits.Memory = 64 * sandbox.MiB }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.edit(s)
			got, ok := b.poolKey(s, "img")
			if !ok || (got == k) != tc.same {
				t.Fatalf("same key %v (ok %v), want %v", got == k, ok, tc.same)
			}
		})
	}
	if other, _ := b.poolKey(base(), "other"); other == k {
		t.Fatal("the image is not part of the key")
	}
	s := base()
	s.Mounts = append(s.Mounts, sandbox.Mount{Source: "/srv/prog", Target: "/opt/prog"})
	if _, ok := b.poolKey(s, "img"); ok {
		t.Fatal("a run with a mount the image lacks has a pool")
	}
}

func TestParseUser(t *testing.T) {
	for _, tc := range []struct {
		in       string
		uid, gid int
		ok       bool
	}{
		{"65534:65534", 65534, 65534, true},
		{"1000", 1000, 1000, true},
		{"1000:100", 1000, 100, true},
		{"0:0", 0, 0, false},
		{"root", 0, 0, false},
		{"nobody:nogroup", 0, 0, false},
		{"1000:0", 0, 0, false},
		{"-1:5", 0, 0, false},
		{"", 0, 0, false},
	} {
		uid, gid, err := parseUser(tc.in)
		if (err == nil) != tc.ok || (tc.ok && (uid != tc.uid || gid != tc.gid)) {
			t.Errorf("parseUser(%q) = %d, %d, %v", tc.in, uid, gid, err)
		}
	}
}

func FuzzParseUser(f *testing.F) {
	for _, s := range []string{"65534:65534", "1000", "0", "a:b", ":", "1:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		uid, gid, err := parseUser(s)
		if err == nil && (uid <= 0 || gid <= 0) {
			t.Fatalf("parseUser(%q) accepted root or a negative id: %d:%d", s, uid, gid)
		}
	})
}

func TestTarFiles(t *testing.T) {
	files := []sandbox.File{
		{Path: "main.py", Content: []byte("print(1)\n")},
		{Path: "src/lib/a.txt", Content: []byte("a"), Mode: 0o600},
		{Path: "src/run.sh", Content: []byte("#!/bin/sh\n"), Mode: 0o755},
	}
	archive, err := tarFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(archive))
	var got []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		got = append(got, h.Name+" "+string(rune('0'+h.Mode>>6&7))+string(rune('0'+h.Mode>>3&7))+string(rune('0'+h.Mode&7))+" "+string(body))
	}
	want := []string{"main.py 644 print(1)\n", "src/ 755 ", "src/lib/ 755 ", "src/lib/a.txt 600 a", "src/run.sh 755 #!/bin/sh\n"}
	if !slices.Equal(got, want) {
		t.Fatalf("archive holds\n%q\nwant\n%q", got, want)
	}
}
