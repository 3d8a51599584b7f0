package lang

import (
	"strings"
	"testing"
)

// FuzzCompilerFlags: whatever flag a default allow-list accepts is one
// argument that starts with "-", names no path (no "/", "\", "@"), holds
// no control byte and is on no deny list; and the check never panics.
func FuzzCompilerFlags(f *testing.F) {
	for _, s := range []string{"-O2", "-DX=3", "-B/tmp", "@f", "-Wl,-T,x", "-gcflags=all=-N -l", "-Clinker=cc", "--release=17",
		"-ldflags=-X main.v=1", "-fsanitize=address,undefined", "-include", "-", "", "\x00"} {
		f.Add(s)
	}
	langs := Default().All()
	f.Fuzz(func(t *testing.T, flag string) {
		for _, l := range langs {
			if err := l.CheckCompilerFlags([]string{flag}); err != nil {
				continue
			}
			switch {
			case !l.Compiled:
				t.Fatalf("%s, interpreted, accepted %q", l.ID, flag)
			case flag == "" || flag[0] != '-':
				t.Fatalf("%s accepted %q, which does not start with -", l.ID, flag)
			case strings.ContainsAny(flag, "/\\@"):
				t.Fatalf("%s accepted %q, which may name a path or a file of arguments", l.ID, flag)
			case deniedFlag(flag):
				t.Fatalf("%s accepted %q, which the deny list refuses", l.ID, flag)
			}
			for _, c := range []byte(flag) {
				if c < 0x20 || c == 0x7f {
					t.Fatalf("%s accepted %q, which holds a control byte", l.ID, flag)
				}
			}
		}
	})
}

// FuzzCheckEnv: an accepted variable has a name of the documented form,
// none the sandbox or the loader keeps, and a value without NUL.
func FuzzCheckEnv(f *testing.F) {
	for _, s := range [][2]string{{"A", "b"}, {"LD_PRELOAD", "x"}, {"PATH", "/"}, {"a", ""}, {"X", "\x00"}, {"CODERUNNER_X", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		if err := CheckEnv(map[string]string{name: value}); err != nil {
			return
		}
		switch {
		case !envName.MatchString(name):
			t.Fatalf("accepted the name %q", name)
		case strings.HasPrefix(name, "LD_"), strings.HasPrefix(name, "CODERUNNER_"),
			name == "PATH", name == "HOME", name == "TMPDIR", name == "LANG", name == "LC_ALL":
			t.Fatalf("accepted the reserved name %q", name)
		case strings.IndexByte(value, 0) >= 0:
			t.Fatalf("accepted a value with NUL for %q", name)
		}
	})
}
