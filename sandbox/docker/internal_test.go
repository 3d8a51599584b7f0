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
