package interp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/session"
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

// runnerFunc is a Runner.
type runnerFunc func(ctx context.Context, req execute.Request, lim execute.ProcessLimits) (*sandbox.Result, error)

func (f runnerFunc) RunProcess(ctx context.Context, req execute.Request, lim execute.ProcessLimits) (*sandbox.Result, error) {
	return f(ctx, req, lim)
}

// An interpreter ended on purpose (its session deleted or expired, a
// restart) is not logged as a failure: its run ends cancelled, as every
// backend ends a cancelled run. One whose sandbox failed is.
func TestEndOnPurposeNotLogged(t *testing.T) {
	store, err := session.Open(session.Options{Dir: t.TempDir(), NoTmpfs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	for _, tt := range []struct {
		name   string
		run    runnerFunc
		logged bool
	}{
		{"cancelled", func(ctx context.Context, _ execute.Request, _ execute.ProcessLimits) (*sandbox.Result, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, false},
		{"failed", func(context.Context, execute.Request, execute.ProcessLimits) (*sandbox.Result, error) {
			return nil, fmt.Errorf("%w: the engine is gone", sandbox.ErrSetup)
		}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			m := New(tt.run, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
			lease, err := store.Acquire(context.Background(), "a")
			if err != nil {
				t.Fatal(err)
			}
			defer lease.Release()
			p := m.start(lease, drivers["python"], execute.ExecutionLimits{}.WithDefaults())
			if tt.logged {
				// It fails by itself, before it is closed.
				<-p.done
			}
			_ = p.Close()
			if got := strings.Contains(log.String(), "could not run"); got != tt.logged {
				t.Fatalf("logged %v, want %v: %s", got, tt.logged, log.String())
			}
		})
	}
}
