package outstream

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// collector records what a pump delivers.
type collector struct {
	mu     sync.Mutex
	chunks []Chunk
	calls  int
}

func (c *collector) deliver(chunks []Chunk) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	for _, ch := range chunks {
		c.chunks = append(c.chunks, Chunk{Stream: ch.Stream, Data: append([]byte(nil), ch.Data...)})
	}
	return nil
}

func (c *collector) all(rest []Chunk) []Chunk {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append(append([]Chunk(nil), c.chunks...), rest...)
}

// joined is each stream's bytes in delivery order.
func joined(chunks []Chunk) (out [2][]byte) {
	for _, c := range chunks {
		out[c.Stream] = append(out[c.Stream], c.Data...)
	}
	return out
}

// asJSON is what a JSON encoder makes of b: each byte that is not UTF-8
// becomes U+FFFD.
func asJSON(b []byte) string { return string([]rune(string(b))) }

func TestOrderAndContent(t *testing.T) {
	var c collector
	p := New(c.deliver, Options{Window: time.Microsecond})
	out, errw := p.Writer(Stdout), p.Writer(Stderr)
	var want [2]bytes.Buffer
	for i := range 200 {
		w, s := out, Stdout
		if i%3 == 0 {
			w, s = errw, Stderr
		}
		line := []byte(strings.Repeat("x", i) + "\n")
		_, _ = w.Write(line)
		want[s].Write(line)
	}
	rest, err := p.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := joined(c.all(rest))
	for s := range got {
		if !bytes.Equal(got[s], want[s].Bytes()) {
			t.Errorf("%s: got %d bytes, want %d", Stream(s), len(got[s]), want[s].Len())
		}
	}
}

// TestInterleavingKept: the streams' pieces come in the order written.
func TestInterleavingKept(t *testing.T) {
	var c collector
	p := New(c.deliver, Options{Window: time.Hour})
	// With an hour's window, everything after the first delivery waits
	// for Close: the order then is the pump's, not the scheduler's.
	_, _ = p.Writer(Stdout).Write([]byte("a"))
	_, _ = p.Writer(Stderr).Write([]byte("b"))
	_, _ = p.Writer(Stdout).Write([]byte("c"))
	_, _ = p.Writer(Stdout).Write([]byte("d"))
	rest, err := p.Close()
	if err != nil {
		t.Fatal(err)
	}
	var seq []string
	for _, ch := range c.all(rest) {
		seq = append(seq, ch.Stream.String()+":"+string(ch.Data))
	}
	got := strings.Join(seq, " ")
	// The first write may be delivered alone, or with what followed.
	if got != "stdout:a stderr:b stdout:cd" {
		t.Errorf("delivered %q", got)
	}
}

// TestCloseHandsBackPending: what waits for the window is handed back by
// Close at once, not delivered after it.
func TestCloseHandsBackPending(t *testing.T) {
	first := make(chan struct{})
	var once sync.Once
	var c collector
	p := New(func(ch []Chunk) error {
		err := c.deliver(ch)
		once.Do(func() { close(first) })
		return err
	}, Options{Window: time.Hour})
	_, _ = p.Writer(Stdout).Write([]byte("one"))
	<-first
	_, _ = p.Writer(Stdout).Write([]byte("two"))
	rest, err := p.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 1 || string(rest[0].Data) != "two" {
		t.Errorf("Close handed back %+v, want the pending \"two\"", rest)
	}
	if c.calls != 1 {
		t.Errorf("%d deliveries, want the first only", c.calls)
	}
	_, _ = p.Writer(Stdout).Write([]byte("late"))
	if rest, _ := p.Close(); len(rest) != 0 {
		t.Errorf("a write after Close was kept: %+v", rest)
	}
}

// TestSplitCharacters: characters written a byte at a time, or cut by
// MaxChunk, come whole in one chunk.
func TestSplitCharacters(t *testing.T) {
	text := strings.Repeat("héllo wörld €𝄞 ", 50)
	var c collector
	p := New(c.deliver, Options{MaxChunk: 7, Window: time.Microsecond})
	for i := range len(text) {
		_, _ = p.Writer(Stdout).Write([]byte{text[i]})
	}
	rest, err := p.Close()
	if err != nil {
		t.Fatal(err)
	}
	all := c.all(rest)
	for _, ch := range all {
		if !utf8.Valid(ch.Data) || len(ch.Data) > 7 || len(ch.Data) == 0 {
			t.Fatalf("chunk %q: not whole characters, or over MaxChunk", ch.Data)
		}
	}
	if got := string(joined(all)[Stdout]); got != text {
		t.Errorf("got %q", got)
	}
}

// TestInvalidBytes: bytes that are not UTF-8 are delivered as they are,
// and a JSON encoder shows the chunks as it shows the whole stream.
func TestInvalidBytes(t *testing.T) {
	in := []byte("ok \xff\xfe end \xe2\x82 x \xf0\x9f\x98")
	var c collector
	p := New(c.deliver, Options{Window: time.Microsecond})
	for _, b := range in {
		_, _ = p.Writer(Stderr).Write([]byte{b})
	}
	rest, err := p.Close()
	if err != nil {
		t.Fatal(err)
	}
	all := c.all(rest)
	if got := joined(all)[Stderr]; !bytes.Equal(got, in) {
		t.Fatalf("got %q, want %q", got, in)
	}
	var enc strings.Builder
	for _, ch := range all {
		enc.WriteString(asJSON(ch.Data))
	}
	if enc.String() != asJSON(in) {
		t.Errorf("chunks read %q, the whole %q", enc.String(), asJSON(in))
	}
}

// TestDeliveryFailure: once delivery fails nothing more is delivered,
// writes still succeed, and Close reports the failure.
func TestDeliveryFailure(t *testing.T) {
	boom := errors.New("client gone")
	failed := make(chan struct{})
	p := New(func([]Chunk) error { close(failed); return boom }, Options{Window: time.Microsecond})
	_, _ = p.Writer(Stdout).Write([]byte("x"))
	<-failed
	for range 100 {
		if n, err := p.Writer(Stdout).Write([]byte("more")); n != 4 || err != nil {
			t.Fatalf("write after the failure: %d %v", n, err)
		}
	}
	rest, err := p.Close()
	if !errors.Is(err, boom) || len(rest) != 0 {
		t.Errorf("Close: %v %+v, want the failure and nothing", rest, err)
	}
}

// TestWriteNeverBlocks: a delivery that hangs (a stalled client) does not
// hold the writer.
func TestWriteNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	var got bytes.Buffer
	var mu sync.Mutex
	p := New(func(ch []Chunk) error {
		<-release
		mu.Lock()
		defer mu.Unlock()
		for _, c := range ch {
			got.Write(c.Data)
		}
		return nil
	}, Options{Window: time.Microsecond})
	big := bytes.Repeat([]byte("z"), 1<<16)
	for range 64 {
		_, _ = p.Writer(Stdout).Write(big)
	}
	close(release)
	rest, err := p.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rest {
		got.Write(c.Data)
	}
	if got.Len() != 64<<16 {
		t.Errorf("%d bytes delivered, want %d", got.Len(), 64<<16)
	}
}

// TestIdle: OnIdle runs while nothing is written, and its failure stops
// the pump.
func TestIdle(t *testing.T) {
	calls := make(chan struct{}, 10)
	boom := errors.New("gone")
	n := 0
	p := New(func([]Chunk) error { return nil }, Options{Idle: time.Millisecond, OnIdle: func() error {
		n++
		calls <- struct{}{}
		if n == 3 {
			return boom
		}
		return nil
	}})
	for range 3 {
		<-calls
	}
	if _, err := p.Close(); !errors.Is(err, boom) {
		t.Errorf("Close: %v, want OnIdle's failure", err)
	}
}

// FuzzChunks: whatever is written, however it is cut, each stream's
// chunks join to what was written, none is over MaxChunk, and they read
// as the whole does once JSON-encoded.
func FuzzChunks(f *testing.F) {
	f.Add([]byte("hello\xe2\x82\xacworld"), uint8(3), uint8(4))
	f.Add([]byte("\xf0\x9f\x98\x80\xff\x80\x80\x80\x80a"), uint8(1), uint8(5))
	f.Fuzz(func(t *testing.T, in []byte, cut, maxChunk uint8) {
		step := int(cut%16) + 1
		var c collector
		p := New(c.deliver, Options{MaxChunk: int(maxChunk), Window: time.Nanosecond})
		for i := 0; i < len(in); i += step {
			s := Stdout
			if (i/step)%5 == 4 {
				s = Stderr
			}
			_, _ = p.Writer(s).Write(in[i:min(i+step, len(in))])
		}
		rest, err := p.Close()
		if err != nil {
			t.Fatal(err)
		}
		all := c.all(rest)
		var want [2][]byte
		for i := 0; i < len(in); i += step {
			s := Stdout
			if (i/step)%5 == 4 {
				s = Stderr
			}
			want[s] = append(want[s], in[i:min(i+step, len(in))]...)
		}
		limit := max(int(maxChunk), utf8.UTFMax)
		if maxChunk == 0 {
			limit = DefaultMaxChunk
		}
		var enc [2]strings.Builder
		for _, ch := range all {
			if len(ch.Data) == 0 || len(ch.Data) > limit {
				t.Fatalf("chunk of %d bytes (limit %d)", len(ch.Data), limit)
			}
			enc[ch.Stream].WriteString(asJSON(ch.Data))
		}
		got := joined(all)
		for s := range got {
			if !bytes.Equal(got[s], want[s]) {
				t.Fatalf("%s: got %q, want %q", Stream(s), got[s], want[s])
			}
			if enc[s].String() != asJSON(want[s]) {
				t.Fatalf("%s: chunks read %q, the whole %q", Stream(s), enc[s].String(), asJSON(want[s]))
			}
		}
	})
}
