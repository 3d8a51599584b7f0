package watch

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// fakeProgram is a Program that ends when end is closed (never if nil),
// with exit; it records what the supervisor asked of it.
type fakeProgram struct {
	end     chan struct{}
	waitErr error
	exit    Exit
	totals  Totals

	stopped  []Reason
	exitedAs []Reason
}

func (p *fakeProgram) Wait(quit <-chan struct{}) error {
	select {
	case <-p.end:
		return p.waitErr
	case <-quit:
		return nil
	}
}

func (p *fakeProgram) Stop(reason Reason) error {
	p.stopped = append(p.stopped, reason)
	return nil
}

func (p *fakeProgram) Totals(int64) (Totals, error) { return p.totals, nil }

func (p *fakeProgram) Exit(_ *sandbox.Result, reason Reason) (Exit, error) {
	p.exitedAs = append(p.exitedAs, reason)
	if reason != ReasonNone {
		return Exit{Code: -1, Signal: syscall.SIGKILL, Lost: p.exit.Lost}, nil
	}
	return p.exit, nil
}

func testSpec(wall time.Duration) *sandbox.Spec {
	return &sandbox.Spec{Limits: sandbox.Limits{WallTime: wall, CPUTime: time.Hour, CPUs: 1, OutputBytes: 16}}
}

func ended() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// TestSuperviseExit: a program that ends by itself is stopped once with no
// reason, its output is kept, and its exit decides the verdict.
func TestSuperviseExit(t *testing.T) {
	sup := NewSupervisor(Config{Spec: testSpec(time.Hour), Drain: time.Minute})
	sup.Drain(strings.NewReader("out"), strings.NewReader("err"))
	p := &fakeProgram{end: ended(), exit: Exit{Code: 3}, totals: Totals{CPU: time.Second, PeakMemory: 42}}
	res, err := sup.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusNonzeroExit || res.ExitCode != 3 || string(res.Stdout) != "out" || string(res.Stderr) != "err" {
		t.Fatalf("result %+v", res)
	}
	if res.CPUTime != time.Second || res.PeakMemory != 42 || len(res.Samples) == 0 || res.Samples[len(res.Samples)-1].CPUTime != time.Second {
		t.Fatalf("totals not reported: %+v", res)
	}
	if len(p.stopped) != 1 || p.stopped[0] != ReasonNone {
		t.Fatalf("Stop calls %v, want one with no reason", p.stopped)
	}
}

// TestSuperviseWall: a program that does not end is stopped at the wall
// time and reads as killed.
func TestSuperviseWall(t *testing.T) {
	sup := NewSupervisor(Config{Spec: testSpec(time.Millisecond), Drain: time.Minute})
	sup.Drain(strings.NewReader(""), strings.NewReader(""))
	p := &fakeProgram{}
	res, err := sup.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusTimeLimit || res.TimeLimit != "wall" || res.Signal != syscall.SIGKILL {
		t.Fatalf("result %+v", res)
	}
	if len(p.stopped) != 1 || p.stopped[0] != ReasonWall {
		t.Fatalf("Stop calls %v, want one for the wall time", p.stopped)
	}
}

// TestSuperviseOutput: output past the cap halts the program at once from
// the reading goroutine and stops the run for its output, even when the
// program ended first.
func TestSuperviseOutput(t *testing.T) {
	var halted atomic.Int32
	sup := NewSupervisor(Config{Spec: testSpec(time.Hour), Drain: time.Minute, Halt: func() { halted.Add(1) }})
	end := make(chan struct{})
	sup.Copy(func(stdout, _ io.Writer) {
		_, _ = io.Copy(stdout, strings.NewReader(strings.Repeat("x", 100)))
		close(end)
	})
	p := &fakeProgram{end: end}
	res, err := sup.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusOutputLimit || !res.StdoutTruncated || len(res.Stdout) != 16 {
		t.Fatalf("result %+v", res)
	}
	if halted.Load() != 1 {
		t.Fatalf("halted %d times, want once", halted.Load())
	}
	if len(p.exitedAs) != 1 || p.exitedAs[0] != ReasonOutput {
		t.Fatalf("Exit asked for %v, want the output limit", p.exitedAs)
	}
}

// TestSuperviseCancel: a cancelled run is stopped and returns the
// context's error, also when the backend's wait fails because of it.
func TestSuperviseCancel(t *testing.T) {
	for _, p := range []*fakeProgram{{}, {end: ended(), waitErr: errors.New("engine gone")}} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		sup := NewSupervisor(Config{Spec: testSpec(time.Hour), Drain: time.Minute})
		sup.Drain(strings.NewReader(""), strings.NewReader(""))
		if _, err := sup.Run(ctx, p); !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want the cancellation", err)
		}
		if len(p.stopped) != 1 || p.stopped[0] != ReasonCancel {
			t.Fatalf("Stop calls %v, want one for the cancellation", p.stopped)
		}
	}
}

// TestSuperviseWaitError: a backend that cannot follow its program ends
// the run with its error.
func TestSuperviseWaitError(t *testing.T) {
	sup := NewSupervisor(Config{Spec: testSpec(time.Hour), Drain: time.Minute})
	sup.Drain(strings.NewReader(""), strings.NewReader(""))
	gone := errors.New("engine gone")
	if _, err := sup.Run(context.Background(), &fakeProgram{end: ended(), waitErr: gone}); !errors.Is(err, gone) {
		t.Fatalf("error %v, want the backend's", err)
	}
}

// TestSuperviseLost: an end the backend cannot tell is an error, unless a
// limit explains it.
func TestSuperviseLost(t *testing.T) {
	died := errors.New("init died")
	lost := func() error { return died }
	sup := NewSupervisor(Config{Spec: testSpec(time.Hour), Drain: time.Minute})
	sup.Drain(strings.NewReader(""), strings.NewReader(""))
	p := &fakeProgram{end: ended(), exit: Exit{Code: -1, Signal: syscall.SIGKILL, Lost: lost}}
	if _, err := sup.Run(context.Background(), p); !errors.Is(err, died) {
		t.Fatalf("error %v, want the lost end's", err)
	}
	sup = NewSupervisor(Config{Spec: testSpec(time.Millisecond), Drain: time.Minute})
	sup.Drain(strings.NewReader(""), strings.NewReader(""))
	res, err := sup.Run(context.Background(), &fakeProgram{exit: Exit{Lost: lost}})
	if err != nil || res.Status != sandbox.StatusTimeLimit {
		t.Fatalf("killed at the wall time: %v, %+v", err, res)
	}
}

// TestSuperviseStuck: output held open past the drain bound is reported,
// and the run still ends.
func TestSuperviseStuck(t *testing.T) {
	stuck := 0
	sup := NewSupervisor(Config{Spec: testSpec(time.Hour), Drain: time.Millisecond, Stuck: func() { stuck++ }})
	pr, pw := io.Pipe()
	defer pw.Close()
	sup.Drain(pr, strings.NewReader(""))
	if _, err := sup.Run(context.Background(), &fakeProgram{end: ended()}); err != nil {
		t.Fatal(err)
	}
	if stuck != 1 {
		t.Fatalf("stuck reported %d times, want once", stuck)
	}
}
