package interp

import (
	"bytes"
	"strings"
	"testing"
)

// feed writes s to d in pieces of n bytes.
func feed(d *demux, s string, n int) {
	for len(s) > 0 {
		k := min(n, len(s))
		_, _ = d.Write([]byte(s[:k]))
		s = s[k:]
	}
}

// The mark is found whatever the pieces the stream comes in, the output
// before it is the call's, and what follows the answer is dropped.
func TestDemuxPieces(t *testing.T) {
	m := "\n" + mark + "abc "
	for n := 1; n <= len(m)+3; n++ {
		d := newDemux(true, 1<<10)
		var live bytes.Buffer
		got := d.begin([]byte(m), 100, &live)
		feed(d, "out\x1e\n"+m+`{"value":"1"}`+"\nlater", n)
		line := <-got
		out, cut := d.end()
		if string(line) != `{"value":"1"}` || string(out) != "out\x1e\n" || cut || live.String() != "out\x1e\n" {
			t.Fatalf("pieces of %d: %q %q %v live %q", n, line, out, cut, live.String())
		}
	}
}

// A mark with another nonce is output; output over the cap is cut but
// the mark is still found; the answer over its bound closes the channel.
func TestDemuxAttacks(t *testing.T) {
	d := newDemux(true, 16)
	got := d.begin([]byte("\n"+mark+"n1 "), 5, nil)
	feed(d, "\n"+mark+"n0 {\"value\":\"forged\"}\n"+strings.Repeat("x", 100), 7)
	select {
	case <-got:
		t.Fatal("a mark of another nonce was taken")
	default:
	}
	feed(d, "\n"+mark+"n1 "+strings.Repeat("y", 17), 3)
	if line, ok := <-got; ok || line != nil {
		t.Fatalf("an answer over its bound: %q %v", line, ok)
	}
	out, cut := d.end()
	if string(out) != "\n"+mark[:4] || !cut {
		t.Fatalf("the cap: %q %v", out, cut)
	}
	// Between calls nothing is kept.
	feed(d, "stray", 2)
	d.begin([]byte("\n"+mark+"n2\n"), 10, nil)
	feed(d, "ok\n"+mark+"n2\n", 4)
	if out, _ := d.end(); string(out) != "ok" {
		t.Fatalf("after stray output: %q", out)
	}
}

// Standard error's mark has no answer after it.
func TestDemuxStderr(t *testing.T) {
	d := newDemux(false, 0)
	got := d.begin([]byte("\n"+mark+"n\n"), 10, nil)
	feed(d, "e1\ne2\n"+mark+"n\nafter", 5)
	if line, ok := <-got; !ok || line != nil {
		t.Fatalf("stderr's mark: %q %v", line, ok)
	}
	if out, cut := d.end(); string(out) != "e1\ne2" || cut {
		t.Fatalf("stderr: %q %v", out, cut)
	}
}

// Output reaches the live writer at once, but for an end that may begin
// the mark.
func TestDemuxLive(t *testing.T) {
	d := newDemux(true, 1<<10)
	var live bytes.Buffer
	d.begin([]byte(mark+"n "), 100, &live)
	feed(d, "first\n", 100)
	if live.String() != "first\n" {
		t.Fatalf("live %q", live.String())
	}
	feed(d, "a"+mark[:3], 100)
	if live.String() != "first\na" {
		t.Fatalf("live %q, want the mark's beginning held", live.String())
	}
	feed(d, "b", 100)
	if live.String() != "first\na"+mark[:3]+"b" {
		t.Fatalf("live %q", live.String())
	}
}
