package mountpoint

import (
	"strings"
	"testing"
)

func TestUnescape(t *testing.T) {
	tests := map[string]string{
		`/tmp/a`:          "/tmp/a",
		`/tmp/a\040b`:     "/tmp/a b",
		`/tmp/tab\011x`:   "/tmp/tab\tx",
		`/tmp/back\134x`:  `/tmp/back\x`,
		`/tmp/short\04`:   `/tmp/short\04`,
		`/tmp/notoct\9xx`: `/tmp/notoct\9xx`,
	}
	for in, want := range tests {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzUnescape(f *testing.F) {
	for _, s := range []string{`/a\040b`, `\`, `\0`, `\777`, `/x\134\134`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Unescape(s)
		if len(got) > len(s) {
			t.Errorf("unescaping %q grew it to %q", s, got)
		}
		if !strings.Contains(s, `\`) && got != s {
			t.Errorf("%q has no escape but became %q", s, got)
		}
	})
}
