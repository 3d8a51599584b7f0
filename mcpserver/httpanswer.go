package mcpserver

import (
	"net/http"
	"strconv"
	"sync"
)

// answerKind is how a POST is answered.
type answerKind uint8

const (
	answerJSON   answerKind = iota // the one response as a JSON body
	answerBatch                    // the responses of a batch as a JSON array
	answerStream                   // server-sent events, the response last
)

// answer is the answer of one POST that carried requests. The goroutine
// that writes a response to the connection writes it to the HTTP response
// too, as LineTransport writes to stdout: handing it to the POST's own
// goroutine would put one more wake-up on the path of every call. The
// POST's goroutine only waits for done, and the lock keeps the two from
// using the ResponseWriter at once, or it being used after the POST
// returned.
type answer struct {
	mu      sync.Mutex
	rw      http.ResponseWriter
	rc      *http.ResponseController
	kind    answerKind
	left    int       // responses still to come
	parts   []*[]byte // a batch's responses so far
	ended   bool      // answered or given up: nothing more is written
	broken  bool      // a write failed: the client is gone
	started bool      // an event stream's headers are sent
	done    chan struct{}
	// token is the progress token routed to this answer, if any.
	token any
	// onAnswered, if set, is called before the headers are written, with
	// whether the response is an error (false for an event stream, whose
	// headers go first).
	onAnswered func(failed bool)
}

func newAnswer(rw http.ResponseWriter, kind answerKind, calls int) *answer {
	a := &answer{rw: rw, kind: kind, left: calls, done: make(chan struct{})}
	if kind == answerStream {
		a.rc = http.NewResponseController(rw)
	}
	return a
}

// startStream sends an event stream's headers, so that the client sees
// the stream begin while the call runs.
func (a *answer) startStream() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.ended {
		a.startStreamLocked()
	}
}

// startStreamLocked sends the headers unless they are sent; a.mu is held.
// An event can come before the POST's goroutine sends them: a progress
// token that another call used is routed here as soon as it is registered.
func (a *answer) startStreamLocked() {
	if a.started {
		return
	}
	a.started = true
	if a.onAnswered != nil {
		// The headers go before the response is known.
		a.onAnswered(false)
	}
	h := a.rw.Header()
	h["Content-Type"] = contentSSE
	h["Cache-Control"] = noCache
	a.rw.WriteHeader(http.StatusOK)
	_ = a.rc.Flush()
}

// deliver writes one encoded message and takes the buffer; false when the
// POST no longer takes messages.
func (a *answer) deliver(buf *[]byte, final, failed bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended {
		putBuf(buf)
		return false
	}
	switch a.kind {
	case answerStream:
		a.startStreamLocked()
		ev := getBuf()
		*ev = appendEvent(*ev, *buf)
		putBuf(buf)
		_, err := a.rw.Write(*ev)
		putBuf(ev)
		if err == nil {
			err = a.rc.Flush()
		}
		if err != nil {
			a.broken = true
			a.end()
			return false
		}
	case answerBatch:
		if !final {
			putBuf(buf)
			return false
		}
		a.parts = append(a.parts, buf)
		if a.left--; a.left > 0 {
			return true
		}
		body := getBuf()
		b := append(*body, '[')
		for i, p := range a.parts {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, *p...)
			putBuf(p)
		}
		*body = append(b, ']')
		a.parts = nil
		a.writeJSON(*body)
		putBuf(body)
	default:
		if !final {
			putBuf(buf)
			return false
		}
		if a.onAnswered != nil {
			a.onAnswered(failed)
		}
		a.writeJSON(*buf)
		putBuf(buf)
	}
	if final {
		a.end()
	}
	return true
}

// writeJSON writes a whole JSON body and sends it at once, rather than
// when the POST's handler returns: what the handlers around this one do
// on their way out (a request log line, metrics, releasing the running
// slot) must not come before the client has its answer. The flush goes
// through an http.ResponseController, which finds it in a wrapping
// ResponseWriter that has FlushError or Unwrap rather than Flush, as
// httpapi's does.
func (a *answer) writeJSON(body []byte) {
	h := a.rw.Header()
	h["Content-Type"] = contentJSON
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	a.rw.WriteHeader(http.StatusOK)
	if _, err := a.rw.Write(body); err != nil {
		return
	}
	rc := a.rc
	if rc == nil {
		rc = http.NewResponseController(a.rw)
	}
	_ = rc.Flush()
}

// end marks the answer complete; a.mu is held.
func (a *answer) end() {
	a.ended = true
	close(a.done)
}

// giveUp stops the answer from taking messages, for a POST that returns
// without it; false when it was complete already. Once it returns, the
// ResponseWriter is the POST's alone.
func (a *answer) giveUp() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended {
		return false
	}
	a.ended = true
	for _, p := range a.parts {
		putBuf(p)
	}
	a.parts = nil
	return true
}
