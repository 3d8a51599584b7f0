package interp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/coderunner/coderunner/execute"
)

// fakeProc is a proc whose driver is answer: it gets each run line and
// writes what the driver would.
func fakeProc(t *testing.T, answer func(nonce string, out, err io.Writer)) *proc {
	t.Helper()
	r, w := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	p := &proc{lang: "javascript", stdin: w, cancel: cancel, out: newDemux(true, maxAnswer), err: newDemux(false, 0),
		done: make(chan struct{})}
	go func() {
		defer close(p.done)
		lines := bufio.NewScanner(r)
		for lines.Scan() {
			var msg struct{ Op, Nonce string }
			if json.Unmarshal(lines.Bytes(), &msg) == nil && msg.Op == "run" {
				answer(msg.Nonce, p.out, p.err)
			}
		}
		<-ctx.Done()
	}()
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// interrupted answers as node's driver does when V8 stopped the cell at
// its time limit, after wait.
func interrupted(wait time.Duration) func(nonce string, out, err io.Writer) {
	return func(nonce string, out, err io.Writer) {
		time.Sleep(wait)
		_, _ = io.WriteString(err, "Error: Script execution timed out\n"+mark+nonce+"\n")
		_, _ = io.WriteString(out, mark+nonce+` {"value":null,"error":"Interrupted: the cell ran out of time","interrupted":true,"display":[]}`+"\n")
	}
}

// A driver that stops a cell at its time limit and answers as the limit
// passes answers a timeout, whichever of its answer and the Manager's
// timer comes first; the cell's state is kept.
func TestInterruptedAtTheLimit(t *testing.T) {
	m := New(nil, Options{})
	limits := execute.ExecutionLimits{TimeLimit: 0.02}.WithDefaults()
	p := fakeProc(t, interrupted(limits.Duration()))
	for i := range 50 {
		res := &execute.Result{}
		m.call(context.Background(), p, execute.Request{Code: "while (true) {}"}, limits, res)
		if res.Status != execute.StatusTimeout || res.Message() == "" || p.ended() {
			t.Fatalf("cell %d: %s %s (ended %v)", i, res.Status, res.Message(), p.ended())
		}
	}
}

// An interruption the cell made itself well within its limit (a
// KeyboardInterrupt it raised) is its own error, not a timeout.
func TestInterruptedEarlyIsAnError(t *testing.T) {
	m := New(nil, Options{})
	limits := execute.ExecutionLimits{TimeLimit: 60}.WithDefaults()
	p := fakeProc(t, interrupted(0))
	res := &execute.Result{}
	m.call(context.Background(), p, execute.Request{Code: "raise KeyboardInterrupt"}, limits, res)
	if res.Status != execute.StatusExecutionError {
		t.Fatalf("%s %s", res.Status, res.Message())
	}
}
