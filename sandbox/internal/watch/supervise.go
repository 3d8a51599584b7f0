package watch

import (
	"context"
	"io"
	"syscall"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// Program is a backend's side of one supervised run: the program was
// started, and the supervisor asks the backend only what differs between
// backends. Its methods are called in this order, each once, from the
// goroutine of Run (Wait from a goroutine of its own).
type Program interface {
	// Wait returns when the program ended by itself, or soon after quit
	// is closed. An error ends the run with it (with the context's error
	// when the run's context is done).
	Wait(quit <-chan struct{}) error
	// Stop makes sure nothing of the run goes on: reason is why the
	// supervisor stopped it, ReasonNone if it ended by itself. An error
	// (the program never ran) ends the run with it.
	Stop(reason Reason) error
	// Totals reads what the run used once it is over; seen is the largest
	// memory reading the monitor took while it ran.
	Totals(seen int64) (Totals, error)
	// Exit tells how the program ended, given why the supervisor stopped
	// it and what it wrote (res holds its output and totals). An error
	// ends the run with it (the program could not be run).
	Exit(res *sandbox.Result, reason Reason) (Exit, error)
}

// Settler is a Program with more than its output to read after the run
// (the native init's report): Settle waits for it until ctx is done, within
// the same bound as the output.
type Settler interface {
	Settle(ctx context.Context)
}

// Totals are a run's measurements once it is over.
type Totals struct {
	CPU            time.Duration
	PeakMemory     int64
	MemoryExceeded bool
}

// Exit is how the program ended.
type Exit struct {
	Code   int
	Signal syscall.Signal
	// Lost, when set, says the backend does not know how the program
	// ended: unless a limit explains it, the run fails with its error.
	Lost func() error
}

// Config is what a backend tells the supervisor of a run besides its
// Program.
type Config struct {
	// Spec gives the limits, the output's tees and bound, and the sample
	// interval.
	Spec *sandbox.Spec
	// Source reads the run's counters while it runs; nil when there is
	// nothing to read (no cgroup): the CPU limit is then the rlimit's.
	Source Source
	// MaxPause, when positive, bounds the pause between two readings of
	// Source (see NewMonitor).
	MaxPause time.Duration
	// Halt, when set, is called from the reading goroutine the moment the
	// output passes its cap, to stop the program before it takes another
	// step; without it the program is stopped by Stop.
	Halt func()
	// Drain bounds the wait for the output after the run was stopped;
	// DrainEnded after a program that ended by itself, whose late output
	// is still its own (a slow reader).
	Drain, DrainEnded time.Duration
	// Stuck is called (once) when output is still open after the bound.
	Stuck func()
}

// Supervisor runs the part of a run common to every backend: it captures
// the output under its cap, watches the CPU time and the wall time, stops
// the program at the first limit (or when the run is cancelled), waits for
// the rest of its output, and decides the verdict.
type Supervisor struct {
	cfg            Config
	kill           chan Reason
	stdout, stderr *Capture
}

// NewSupervisor returns the supervisor of a run, ready to capture its
// output before the program starts.
func NewSupervisor(cfg Config) *Supervisor {
	s := &Supervisor{cfg: cfg, kill: make(chan Reason, 4)}
	lim := cfg.Spec.Limits
	over := func() {
		s.stop(ReasonOutput)
		if cfg.Halt != nil {
			cfg.Halt()
		}
	}
	s.stdout = NewCapture(lim.OutputBytes, cfg.Spec.Stdout, over).Keep(cfg.Spec.KeepOutput)
	s.stderr = NewCapture(lim.OutputBytes, cfg.Spec.Stderr, over).Keep(cfg.Spec.KeepOutput)
	return s
}

// stop asks the loop of Run to stop the program for reason; the first
// reason wins.
func (s *Supervisor) stop(reason Reason) {
	select {
	case s.kill <- reason:
	default:
	}
}

// Drain reads the program's two output streams into the captures, each in
// a goroutine of its own, and closes them at EOF.
func (s *Supervisor) Drain(stdout, stderr io.Reader) {
	go s.stdout.Drain(stdout)
	go s.stderr.Drain(stderr)
}

// Copy runs copyOut in a goroutine to fill the captures from a stream that
// carries both outputs; the captures are done when it returns. It should
// stop at the first write error: past the cap, a capture fails.
func (s *Supervisor) Copy(copyOut func(stdout, stderr io.Writer)) {
	go func() {
		copyOut(s.stdout, s.stderr)
		_ = s.stdout.Close()
		_ = s.stderr.Close()
	}()
}

// Taken is how many bytes of output the captures took so far: it tells
// output still flowing.
func (s *Supervisor) Taken() int64 { return s.stdout.Taken() + s.stderr.Taken() }

// Stderr is the capture of the program's standard error.
func (s *Supervisor) Stderr() *Capture { return s.stderr }

// Run supervises the program, which has just been let go, until it is
// over, and returns its result. On cancellation it returns ctx's error.
func (s *Supervisor) Run(ctx context.Context, prog Program) (*sandbox.Result, error) {
	spec, lim := s.cfg.Spec, s.cfg.Spec.Limits
	start := time.Now()
	mon := NewMonitor(s.cfg.Source, lim, spec.SampleInterval, s.cfg.MaxPause, start)
	go mon.Watch(func() { s.stop(ReasonCPU) })
	defer mon.Stop()
	wall := time.NewTimer(lim.WallTime)
	defer wall.Stop()

	quit := make(chan struct{})
	waited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = prog.Wait(quit)
		close(waited)
	}()
	reason, ended := ReasonNone, false
	select {
	case <-waited:
		ended = true
		if waitErr != nil {
			if ctx.Err() == nil {
				return nil, waitErr
			}
			reason = ReasonCancel
		}
	case <-wall.C:
		reason = ReasonWall
	case reason = <-s.kill:
	case <-ctx.Done():
		reason = ReasonCancel
	}
	end := time.Now()
	if !ended {
		close(quit)
		// Whatever Wait says now (it was told to quit) is moot: the
		// run was stopped for reason.
		<-waited
	}
	mon.Stop()
	if err := prog.Stop(reason); err != nil {
		return nil, err
	}
	if reason == ReasonCancel {
		return nil, ctx.Err()
	}
	s.drain(prog, reason)

	res := &sandbox.Result{WallTime: end.Sub(start)}
	res.Stdout, res.StdoutTruncated = s.stdout.Result()
	res.Stderr, res.StderrTruncated = s.stderr.Result()
	tot, err := prog.Totals(mon.PeakSeen())
	if err != nil {
		return nil, err
	}
	res.CPUTime, res.PeakMemory, res.MemoryExceeded = tot.CPU, tot.PeakMemory, tot.MemoryExceeded
	res.Samples = mon.Finish(end, res.CPUTime, res.PeakMemory)
	if reason == ReasonNone && res.Truncated() {
		// The program ended before the stop for its output landed.
		reason = ReasonOutput
	}
	exit, err := prog.Exit(res, reason)
	if err != nil {
		return nil, err
	}
	res.ExitCode, res.Signal = exit.Code, exit.Signal
	if err := Decide(res, reason, lim.CPUTime, exit.Lost); err != nil {
		return nil, err
	}
	return res, nil
}

// drain waits, within the bound for how the run ended, for what the
// backend still reads and then for the end of both outputs.
func (s *Supervisor) drain(prog Program, reason Reason) {
	bound := s.cfg.Drain
	if reason == ReasonNone && s.cfg.DrainEnded > 0 {
		bound = s.cfg.DrainEnded
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if st, ok := prog.(Settler); ok {
		st.Settle(ctx)
	}
	for _, c := range []*Capture{s.stdout, s.stderr} {
		select {
		case <-c.Done():
		case <-ctx.Done():
			if s.cfg.Stuck != nil {
				s.cfg.Stuck()
			}
			return
		}
	}
}
