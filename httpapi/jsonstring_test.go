package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendJSONString: the string written reads back, with any JSON
// decoder, as encoding/json's encoding of the same bytes does, and holds
// no raw line break (an event's data is one line).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "hello\n", "a\"b\\c\t\r\x00\x1f\x7f", "é€𝄞", "\xff\xfe", "\xe2\x82", "<a>&", "\u2028\u2029", "\xed\xa0\x80"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := appendJSONString(nil, b)
		if bytes.ContainsAny(got, "\n\r") {
			t.Fatalf("%q encodes with a raw line break: %q", b, got)
		}
		var fromOurs, fromStd string
		if err := json.Unmarshal(got, &fromOurs); err != nil {
			t.Fatalf("%q encodes as %q, which is not JSON: %v", b, got, err)
		}
		std, _ := json.Marshal(string(b))
		_ = json.Unmarshal(std, &fromStd)
		if fromOurs != fromStd {
			t.Fatalf("%q reads back as %q; encoding/json's as %q", b, fromOurs, fromStd)
		}
	})
}

func BenchmarkAppendJSONString(b *testing.B) {
	chunk := bytes.Repeat([]byte("Hello, World! "), 1170)
	dst := make([]byte, 0, 2*len(chunk))
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		dst = appendJSONString(dst[:0], chunk)
	}
}
