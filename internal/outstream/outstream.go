// Package outstream hands a running program's output to a client in
// bounded chunks as it is produced: the events of POST /v1/run's event
// stream and the progress notifications of an MCP execute_code call.
//
// The sandbox writes each stream to its Writer as it reads the program's
// pipes (at most the output cap of each, the bytes the result keeps). A
// Pump copies what is written, never blocking the writer: a slow or
// stalled client never slows the program nor changes its verdict, and
// what waits is bounded by the output caps. Its goroutine delivers the
// pending output at once when it has been quiet, then at most once per
// Window, so that a program that prints many small lines costs a few
// large chunks rather than one event per line, without delaying the first
// output nor the end (Close hands back what is still pending at once).
//
// Chunks are cut at UTF-8 boundaries: a character split between two reads
// of the pipe, or by MaxChunk, is delivered whole in one chunk. Bytes that
// are not UTF-8 at all are delivered as they are; a JSON encoder shows
// each as U+FFFD, exactly as it does in the result's copy of the stream.
package outstream

import (
	"sync"
	"time"
	"unicode/utf8"
)

// Stream names one of the program's two output streams.
type Stream int

// The output streams.
const (
	Stdout Stream = iota
	Stderr
)

// String is the stream's name, "stdout" or "stderr": the name of its
// events.
func (s Stream) String() string {
	if s == Stderr {
		return "stderr"
	}
	return "stdout"
}

// Chunk is a piece of one stream, at most Options.MaxChunk bytes.
type Chunk struct {
	Stream Stream
	Data   []byte
}

// Defaults of Options.
const (
	DefaultMaxChunk = 16 << 10
	DefaultWindow   = 5 * time.Millisecond
)

// Options configure a Pump; zero fields take the defaults.
type Options struct {
	// MaxChunk bounds the bytes of a chunk (DefaultMaxChunk). A chunk is
	// shorter by up to three bytes when the bound falls inside a
	// character. Values below utf8.UTFMax are raised to it.
	MaxChunk int
	// Window is the least time between two deliveries (DefaultWindow):
	// what is written meanwhile is delivered together.
	Window time.Duration
	// Idle, when positive, calls OnIdle each time this long passes
	// without a delivery (an event stream's keep-alive).
	Idle   time.Duration
	OnIdle func() error
}

// Pump collects the output of one run and delivers it from a goroutine of
// its own. Its writers are safe for concurrent use; Close must be called
// once the run is over.
type Pump struct {
	deliver func([]Chunk) error
	opts    Options

	mu      sync.Mutex
	pending []Chunk // in the order written; the last one grows
	failed  bool    // deliver or OnIdle failed: drop what comes

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
	err  error // deliver's or OnIdle's, set by the goroutine

	// carry holds, per stream, the start of a character whose rest is
	// not written yet; only the goroutine (then Close) touches it.
	carry [2][]byte
}

// New starts a pump that calls deliver with the chunks written since its
// last call, in the order written. When deliver (or OnIdle) fails, the
// pump stops delivering and drops what is written after; Close returns the
// error.
func New(deliver func([]Chunk) error, opts Options) *Pump {
	if opts.MaxChunk <= 0 {
		opts.MaxChunk = DefaultMaxChunk
	}
	opts.MaxChunk = max(opts.MaxChunk, utf8.UTFMax)
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	p := &Pump{
		deliver: deliver,
		opts:    opts,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go p.run()
	return p
}

// Writer returns the writer of stream s.
func (p *Pump) Writer(s Stream) *Writer { return &Writer{p: p, s: s} }

// Writer takes one stream's output for a Pump.
type Writer struct {
	p *Pump
	s Stream
}

// Write copies b for delivery. It never blocks on the client and never
// fails: a client that is gone loses the output, the run does not.
func (w *Writer) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p := w.p
	p.mu.Lock()
	if p.failed {
		p.mu.Unlock()
		return len(b), nil
	}
	// Small writes join the last piece; a large one is a piece of its own,
	// copied once, rather than grown into a piece that is copied as it
	// grows.
	if n := len(p.pending); n > 0 && p.pending[n-1].Stream == w.s && len(p.pending[n-1].Data)+len(b) <= p.opts.MaxChunk {
		p.pending[n-1].Data = append(p.pending[n-1].Data, b...)
	} else {
		p.pending = append(p.pending, Chunk{Stream: w.s, Data: append([]byte(nil), b...)})
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return len(b), nil
}

// run delivers until Close.
func (p *Pump) run() {
	defer close(p.done)
	var idle <-chan time.Time
	var idleT *time.Timer
	if p.opts.Idle > 0 && p.opts.OnIdle != nil {
		idleT = time.NewTimer(p.opts.Idle)
		defer idleT.Stop()
		idle = idleT.C
	}
	window := time.NewTimer(time.Hour)
	window.Stop()
	defer window.Stop()
	for {
		select {
		case <-p.wake:
		case <-idle:
			if err := p.opts.OnIdle(); err != nil {
				p.fail(err)
				return
			}
			idleT.Reset(p.opts.Idle)
			continue
		case <-p.stop:
			return
		}
		if chunks := p.take(false); len(chunks) > 0 {
			if err := p.deliver(chunks); err != nil {
				p.fail(err)
				return
			}
			if idleT != nil {
				idleT.Reset(p.opts.Idle)
			}
		}
		window.Reset(p.opts.Window)
		select {
		case <-window.C:
		case <-p.stop:
			return
		}
	}
}

// fail records err and drops the output from now on.
func (p *Pump) fail(err error) {
	p.err = err
	p.mu.Lock()
	p.failed = true
	p.pending = nil
	p.mu.Unlock()
}

// Close stops the goroutine and returns what it had not delivered yet,
// the ends of characters held back included, for the caller to deliver
// itself (before its result); writes after Close are not delivered. err
// is the delivery's failure, when one failed (rest is then empty).
func (p *Pump) Close() (rest []Chunk, err error) {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	if p.err != nil {
		return nil, p.err
	}
	rest = p.take(true)
	p.mu.Lock()
	p.failed = true // nothing more is taken
	p.mu.Unlock()
	return rest, nil
}

// take removes the pending output and cuts it into chunks. The start of
// a character at the end of a stream is held back until its rest is
// written; final hands it back too, at the end, as it is.
func (p *Pump) take(final bool) []Chunk {
	p.mu.Lock()
	pending := p.pending
	p.pending = nil
	p.mu.Unlock()
	var out []Chunk
	for _, c := range pending {
		data := c.Data
		if carry := p.carry[c.Stream]; len(carry) > 0 {
			data = append(carry, data...)
			p.carry[c.Stream] = nil
		}
		if keep := completeLen(data); keep < len(data) {
			p.carry[c.Stream] = append([]byte(nil), data[keep:]...)
			data = data[:keep]
		}
		out = p.split(out, c.Stream, data)
	}
	if final {
		for s, carry := range p.carry {
			if len(carry) > 0 {
				out = append(out, Chunk{Stream: Stream(s), Data: carry})
				p.carry[s] = nil
			}
		}
	}
	return out
}

// split appends data to out in chunks of at most MaxChunk bytes, each
// ending at a character's boundary.
func (p *Pump) split(out []Chunk, s Stream, data []byte) []Chunk {
	for len(data) > 0 {
		n := min(len(data), p.opts.MaxChunk)
		if n < len(data) {
			n = boundary(data, n)
		}
		out = append(out, Chunk{Stream: s, Data: data[:n]})
		data = data[n:]
	}
	return out
}

// boundary moves a cut at n back to where a UTF-8 decoder of the whole
// of data would be between two characters: before the start byte of a
// character that the cut splits. A cut among bytes that start no valid
// character (four continuation bytes in a row) stays where it is, since a
// decoder takes those one by one.
func boundary(data []byte, n int) int {
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			return i
		}
	}
	return n
}

// completeLen is the length of data without the start of a character at
// its end whose rest is missing (at most three bytes): the prefix a
// decoder reads the same whatever follows.
func completeLen(data []byte) int {
	for i := len(data) - 1; i >= 0 && i > len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if utf8.FullRune(data[i:]) {
				return len(data)
			}
			return i
		}
	}
	return len(data)
}
