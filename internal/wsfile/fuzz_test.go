package wsfile

import (
	"path"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCheckPath: a path CheckPath accepts stays beneath the directory it
// is joined to, is clean, and holds nothing the rules refuse.
func FuzzCheckPath(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../x", "/etc/passwd", "a/../../b", "a\x00", "%2e%2e", "a\\b", "ü/ß", "a//b", "./a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if CheckPath(p) != nil {
			return
		}
		joined := path.Join("/ws", p)
		if !strings.HasPrefix(joined, "/ws/") || path.Clean(p) != p || !utf8.ValidString(p) ||
			len(p) > MaxPathBytes || strings.ContainsAny(p, "\x00\\\n") || strings.Count(p, "/")+1 > MaxDepth {
			t.Fatalf("CheckPath accepted %q (joined %q)", p, joined)
		}
		for _, part := range strings.Split(p, "/") {
			if part == "" || part == "." || part == ".." || len(part) > MaxNameBytes {
				t.Fatalf("CheckPath accepted %q with the element %q", p, part)
			}
		}
	})
}
