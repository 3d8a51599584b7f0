package interp

import (
	"bytes"
	"io"
	"sync"
)

// demux takes one output stream of an interpreter and splits it by call:
// what a call's cell writes goes to that call (kept up to a cap, and
// passed on to the call's live writer), until the driver's mark with the
// call's nonce; on standard output the mark is followed by the answer, a
// line of JSON. Output between calls (a thread the cell left running) is
// dropped.
type demux struct {
	mu sync.Mutex
	// frame: this stream carries the answer after the mark.
	frame bool
	// maxFrame bounds the answer.
	maxFrame int

	active bool
	mark   []byte
	// window holds what was received and not yet given to the call: the
	// end that may be the start of a mark, or the answer being read.
	window  []byte
	inFrame bool
	buf     []byte
	keep    int
	cut     bool
	live    io.Writer
	// done receives the answer (nil on standard error) once, or is
	// closed without one when the answer is over its bound.
	done chan []byte
}

func newDemux(frame bool, maxFrame int) *demux {
	return &demux{frame: frame, maxFrame: maxFrame}
}

// begin starts a call: its output is kept up to keep bytes and also
// written to live (when not nil) as it comes.
func (d *demux) begin(mark []byte, keep int, live io.Writer) <-chan []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.active, d.mark, d.window, d.inFrame = true, mark, nil, false
	d.buf, d.keep, d.cut, d.live = nil, keep, false, live
	d.done = make(chan []byte, 1)
	return d.done
}

// end ends the call and returns its output and whether it was cut.
func (d *demux) end() ([]byte, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.active && !d.inFrame {
		// The interpreter stopped before its mark: all it wrote is the
		// call's.
		d.give(d.window)
		d.window = nil
	}
	d.active, d.live = false, nil
	return d.buf, d.cut
}

// Write never fails: the interpreter's output must keep flowing.
func (d *demux) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.active || d.done == nil {
		return len(p), nil
	}
	d.window = append(d.window, p...)
	for d.active && d.done != nil {
		if d.inFrame {
			i := bytes.IndexByte(d.window, '\n')
			if i < 0 {
				if len(d.window) > d.maxFrame {
					close(d.done)
					d.done, d.window = nil, nil
				}
				break
			}
			d.done <- bytes.Clone(d.window[:i])
			d.done, d.window = nil, nil
			break
		}
		i := bytes.Index(d.window, d.mark)
		if i < 0 {
			// All but what may begin a mark is the call's.
			n := len(d.window) - partial(d.window, d.mark)
			d.give(d.window[:n])
			d.window = append(d.window[:0], d.window[n:]...)
			break
		}
		d.give(d.window[:i])
		d.window = d.window[i+len(d.mark):]
		if !d.frame {
			d.done <- nil
			d.done, d.window = nil, nil
			break
		}
		d.inFrame = true
	}
	return len(p), nil
}

// give hands p to the call, d.mu held.
func (d *demux) give(p []byte) {
	if len(p) == 0 {
		return
	}
	room := d.keep - len(d.buf)
	if len(p) > room {
		d.cut = true
		p = p[:max(room, 0)]
	}
	if len(p) == 0 {
		return
	}
	d.buf = append(d.buf, p...)
	if d.live != nil {
		_, _ = d.live.Write(p)
	}
}

// partial is the length of the longest end of w that begins mark.
func partial(w, mark []byte) int {
	for k := min(len(w), len(mark)-1); k > 0; k-- {
		if bytes.HasPrefix(mark, w[len(w)-k:]) {
			return k
		}
	}
	return 0
}
