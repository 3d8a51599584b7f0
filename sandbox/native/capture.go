package native

import (
	"io"
	"os"
	"sync"
)

// capture collects one output stream of the program up to a cap. The moment
// the program writes past the cap it calls over, which stops the run; what
// comes beyond the cap is read and dropped, so that the program never sees
// its output closed (and never goes on to anything else) before it is
// stopped.
type capture struct {
	limit int64
	tee   io.Writer
	over  func()

	mu        sync.Mutex
	buf       []byte
	truncated bool
	done      chan struct{}
}

func newCapture(limit int64, tee io.Writer, over func()) *capture {
	return &capture{limit: limit, tee: tee, over: over, done: make(chan struct{})}
}

// drain reads r until EOF or error and closes it.
func (c *capture) drain(r *os.File) {
	defer close(c.done)
	defer r.Close()
	chunk := make([]byte, 64<<10)
	open := true
	for {
		n, err := r.Read(chunk)
		if n > 0 && open {
			open = c.add(chunk[:n])
		}
		if err != nil {
			return
		}
	}
}

// add keeps what fits under the cap; it returns false once the cap is
// passed.
func (c *capture) add(p []byte) bool {
	c.mu.Lock()
	room := c.limit - int64(len(c.buf))
	keep := p
	if int64(len(p)) > room {
		keep = p[:room]
		c.truncated = true
	}
	c.buf = append(c.buf, keep...)
	truncated := c.truncated
	c.mu.Unlock()
	if c.tee != nil && len(keep) > 0 {
		// A failing tee (a closed terminal) must not stop the capture.
		_, _ = c.tee.Write(keep)
	}
	if truncated {
		c.over()
		return false
	}
	return true
}

func (c *capture) result() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf, c.truncated
}
