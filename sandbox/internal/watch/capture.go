package watch

import (
	"errors"
	"io"
	"sync"
)

// ErrOverCap is returned by Capture.Write once the stream passed its cap, so
// that a copy loop feeding it stops.
var ErrOverCap = errors.New("output limit exceeded")

// Capture collects one output stream of a program up to a cap. The moment
// the program writes past the cap it calls over, once, so that the run can
// be stopped while it is still writing; what was beyond the cap is dropped.
// What it keeps for Result may be bounded below the cap (Keep): the tee
// still receives everything up to the cap.
type Capture struct {
	limit int64
	keep  int64
	tee   io.Writer
	over  func()

	mu        sync.Mutex
	n         int64 // bytes taken, up to limit
	buf       []byte
	truncated bool
	done      chan struct{}
	doneOnce  sync.Once
}

// chunks are Drain's read buffers: two per run, too large to allocate (and
// clear) afresh each time.
var chunks = sync.Pool{New: func() any {
	b := make([]byte, 64<<10)
	return &b
}}

// NewCapture returns a capture of at most limit bytes. tee, when not nil,
// receives what is kept as it arrives; over is called once when the cap is
// passed.
func NewCapture(limit int64, tee io.Writer, over func()) *Capture {
	return &Capture{limit: limit, keep: limit, tee: tee, over: over, done: make(chan struct{})}
}

// Keep bounds what Result returns to the first n bytes of the stream, when
// n is positive and below the cap (sandbox.Spec.KeepOutput); the cap and
// the tee are unchanged. It must be called before the first Write.
func (c *Capture) Keep(n int64) *Capture {
	if n > 0 && n < c.limit {
		c.keep = n
	}
	return c
}

// Drain reads r until EOF or an error, then marks the capture done. Past
// the cap it goes on reading and drops what it reads, so that the program
// never finds its output closed (and goes on to something else) before
// over has stopped it. It closes r when r is an io.Closer.
func (c *Capture) Drain(r io.Reader) {
	defer c.Close()
	if rc, ok := r.(io.Closer); ok {
		defer rc.Close()
	}
	chunk := chunks.Get().(*[]byte)
	defer chunks.Put(chunk)
	open := true
	for {
		n, err := r.Read(*chunk)
		if n > 0 && open {
			if _, werr := c.Write((*chunk)[:n]); werr != nil {
				open = false
			}
		}
		if err != nil {
			return
		}
	}
}

// Write keeps what fits under the cap. Past the cap it returns ErrOverCap.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.truncated {
		c.mu.Unlock()
		return 0, ErrOverCap
	}
	room := c.limit - c.n
	keep := p
	if int64(len(p)) > room {
		keep = p[:room]
		c.truncated = true
	}
	if held := c.keep - int64(len(c.buf)); held > 0 {
		c.buf = append(c.buf, keep[:min(int64(len(keep)), held)]...)
	}
	c.n += int64(len(keep))
	truncated := c.truncated
	c.mu.Unlock()
	if c.tee != nil && len(keep) > 0 {
		// A failing tee (a closed terminal) must not stop the capture.
		_, _ = c.tee.Write(keep)
	}
	if truncated {
		c.over()
		return len(keep), ErrOverCap
	}
	return len(p), nil
}

// Taken is how many bytes of the stream the capture took so far (up to the
// cap), kept or not: it tells output still flowing from a stream held
// open and quiet.
func (c *Capture) Taken() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Close marks the capture done; it is safe to call more than once.
func (c *Capture) Close() error {
	c.doneOnce.Do(func() { close(c.done) })
	return nil
}

// Done is closed when the stream ended.
func (c *Capture) Done() <-chan struct{} { return c.done }

// Result returns what was kept (at most the Keep bound) and whether the
// stream was cut at the cap.
func (c *Capture) Result() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf, c.truncated
}
