package interp

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/multifile"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/session"
)

var (
	//go:embed driver.py
	pythonDriver string
	//go:embed driver.js
	jsDriver string
)

// driver is the driver of one language: the language it runs as, its
// source, and where it is written in the session's workspace when its
// interpreter starts. The interpreter has read it by the time a cell
// runs, so a cell that rewrites it changes nothing until the interpreter
// restarts, which writes it again.
type driver struct {
	language, source, path string
}

// drivers are the drivers by the languages a request may name.
var drivers = map[string]driver{
	"python":     {"python3", pythonDriver, ".coderunner/interp.py"},
	"python3":    {"python3", pythonDriver, ".coderunner/interp.py"},
	"py":         {"python3", pythonDriver, ".coderunner/interp.py"},
	"javascript": {"javascript", jsDriver, ".coderunner/interp.js"},
	"js":         {"javascript", jsDriver, ".coderunner/interp.js"},
	"node":       {"javascript", jsDriver, ".coderunner/interp.js"},
}

// mark begins the driver's answer; it must be the driver's MARK.
const mark = "\x1ecoderunner-result "

// Defaults of Options.
const (
	DefaultGrace    = 2 * time.Second
	DefaultLifetime = time.Hour
	// maxAnswer bounds the driver's answer line: a value and a JSON
	// display of at most 1 Mi characters each (6 bytes each escaped), and
	// images of at most 16 MiB together, in base64.
	maxAnswer = 40 << 20
	// maxLifeOutput bounds what one interpreter writes over its life, the
	// most a sandbox allows; past it the interpreter is ended and the next
	// call starts another.
	maxLifeOutput = 1 << 30
)

// Runner starts the interpreter's process; *execute.Executor is one.
type Runner interface {
	RunProcess(ctx context.Context, req execute.Request, lim execute.ProcessLimits) (*sandbox.Result, error)
}

// Options configure a Manager. Zero fields take their defaults.
type Options struct {
	// Grace is how long a cell interrupted at its time limit has to stop
	// before its interpreter is killed; default DefaultGrace.
	Grace time.Duration
	// Lifetime bounds the life of one interpreter (its wall and CPU
	// time); default DefaultLifetime. A session idle for its idle timeout
	// ends first, its interpreter with it.
	Lifetime time.Duration
	// Backend is the backend's name, for the results.
	Backend string
	// Logger receives what went wrong with an interpreter; nil discards.
	Logger *slog.Logger
}

// Manager runs cells in the live interpreters of sessions. It is a
// session.Interpreter: each session's interpreter is attached to it and
// ends with it.
type Manager struct {
	run  Runner
	opts Options
	log  *slog.Logger
}

// New returns a Manager that starts interpreters with run.
func New(run Runner, opts Options) *Manager {
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Lifetime <= 0 {
		opts.Lifetime = DefaultLifetime
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{run: run, opts: opts, log: opts.Logger}
}

// Check refuses a request the interpreter mode cannot run.
func Check(req execute.Request) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", execute.ErrInvalidMode, fmt.Sprintf(format, a...))
	}
	switch {
	case drivers[strings.ToLower(req.Language)].source == "":
		return bad("the interpreter mode runs Python (python, python3) and JavaScript (javascript, js), not %q", req.Language)
	case req.Stdin != "" || req.StdinReader != nil:
		return bad("a cell has no stdin")
	case len(req.Files) > 0 || req.Entry != "":
		return bad("a cell takes no files or entry; write them with the session's files first")
	case len(req.Args) > 0 || len(req.CompilerFlags) > 0 || len(req.Env) > 0:
		return bad("a cell takes no args, compiler_flags or env")
	case len(req.Code) > execute.MaxCodeBytes:
		return fmt.Errorf("%w: %d bytes, at most %d", execute.ErrCodeTooLarge, len(req.Code), execute.MaxCodeBytes)
	case strings.TrimSpace(req.Code) == "":
		return execute.ErrEmptyCode
	}
	return req.Limits.WithDefaults().Validate()
}

// Run runs req's code as a cell in the interpreter of lease's session,
// starting one when it has none (or its last one died).
func (m *Manager) Run(ctx context.Context, lease *session.Lease, req execute.Request) (*execute.Result, error) {
	if err := Check(req); err != nil {
		return nil, err
	}
	limits := req.Limits.WithDefaults()
	res := &execute.Result{Language: req.Language, Backend: m.opts.Backend, Interpreter: true,
		LimitsApplied: execute.LimitsApplied{TimeLimitSeconds: limits.TimeLimit, MemoryLimitMB: limits.MemoryLimit,
			CPULimitCores: limits.CPULimit, MaxOutputChars: limits.MaxOutputChars}}
	id := lease.ID()
	res.SessionID = &id
	drv := drivers[strings.ToLower(req.Language)]
	p, _ := lease.Attached().(*proc)
	if p != nil && p.lang != drv.language {
		// The session's interpreter is of the other language: this call
		// starts one of its own.
		lease.Attach(nil)
		_ = p.Close()
		p = nil
		res.Restarted = true
	}
	if p != nil && p.ended() {
		// It died since its last call (a thread of its cell used too
		// much memory, it outlived its lifetime): start anew and say so.
		res.Restarted = true
		lease.Attach(nil)
		_ = p.Close()
		p = nil
	}
	if p == nil {
		p = m.start(lease, drv, limits)
		lease.Attach(p)
	}
	// The interpreter's memory, CPU and processes are those it started
	// with; the time and output limits are the call's.
	res.LimitsApplied.MemoryLimitMB, res.LimitsApplied.CPULimitCores = p.limits.MemoryLimit, p.limits.CPULimit
	m.call(ctx, p, req, limits, res)
	res.Warnings = append(res.Warnings, warnings(res)...)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("execution cancelled: %w", err)
	}
	return res, nil
}

// proc is one interpreter process.
type proc struct {
	// lang is the language it runs; limits the limits it started with.
	lang   string
	limits execute.ExecutionLimits
	stdin  *io.PipeWriter
	cancel context.CancelFunc
	out    *demux
	err    *demux
	done   chan struct{}
	// sr and runErr are the run's, once done is closed.
	sr        *sandbox.Result
	runErr    error
	closeOnce sync.Once
}

// start starts an interpreter in lease's workspace.
func (m *Manager) start(lease *session.Lease, drv driver, limits execute.ExecutionLimits) *proc {
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	p := &proc{lang: drv.language, limits: limits, stdin: w, cancel: cancel, out: newDemux(true, maxAnswer), err: newDemux(false, 0), done: make(chan struct{})}
	req := execute.Request{
		Language:    drv.language,
		Files:       []multifile.File{{Path: drv.path, Content: drv.source}},
		Entry:       drv.path,
		Workspace:   lease.Dir(),
		StdinReader: r,
		Stdout:      p.out,
		Stderr:      p.err,
		Limits:      limits,
	}
	go func() {
		defer close(p.done)
		p.sr, p.runErr = m.run.RunProcess(ctx, req, execute.ProcessLimits{Wall: m.opts.Lifetime, CPU: m.opts.Lifetime,
			Output: maxLifeOutput, Limits: limits})
		_ = r.CloseWithError(io.ErrClosedPipe)
		// Its end on purpose (Close: the session ended, a restart, a
		// kill after the grace) cancels its run: no failure of it.
		if p.runErr != nil && ctx.Err() == nil {
			m.log.Warn("an interpreter could not run", "session_id", lease.ID(), "error", p.runErr)
		}
	}()
	return p
}

// ended reports whether the interpreter's process is over.
func (p *proc) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Close kills the interpreter and waits for its end.
func (p *proc) Close() error {
	p.closeOnce.Do(func() {
		p.cancel()
		_ = p.stdin.Close()
	})
	<-p.done
	return nil
}

// send writes one line to the driver without waiting: a driver that
// stops reading (a cell can make it) must not hold the call past its time
// limit. The pipe writes each line whole, in order; Close ends a write
// still waiting.
func (p *proc) send(v any) {
	line, _ := json.Marshal(v)
	line = append(line, '\n')
	go func() { _, _ = p.stdin.Write(line) }()
}

// answer is the driver's answer to a cell.
type answer struct {
	Value       *string `json:"value"`
	Error       *string `json:"error"`
	Interrupted bool    `json:"interrupted"`
	Display     []struct {
		MIME string `json:"mime"`
		Data string `json:"data"`
		Path string `json:"path"`
	} `json:"display"`
}

// call runs one cell in p and fills res.
func (m *Manager) call(ctx context.Context, p *proc, req execute.Request, limits execute.ExecutionLimits, res *execute.Result) {
	var nb [16]byte
	_, _ = rand.Read(nb[:])
	nonce := hex.EncodeToString(nb[:])
	keep := limits.MaxOutputChars
	gotOut := p.out.begin([]byte(mark+nonce+" "), keep, req.Stdout)
	gotErr := p.err.begin([]byte(mark+nonce+"\n"), keep, req.Stderr)
	start := time.Now()
	p.send(map[string]any{"op": "run", "nonce": nonce, "code": req.Code, "timeout_ms": limits.Duration().Milliseconds()})

	timer := time.NewTimer(limits.Duration())
	defer timer.Stop()
	var grace <-chan time.Time
	var line []byte
	var ok, timedOut, killed bool
wait:
	for {
		select {
		case line, ok = <-gotOut:
			break wait
		case <-p.done:
			break wait
		case <-timer.C:
			timedOut = true
			p.send(map[string]string{"op": "interrupt", "nonce": nonce})
			grace = time.After(m.opts.Grace)
		case <-ctx.Done():
			// The caller left: stop the cell as a timeout would.
			p.send(map[string]string{"op": "interrupt", "nonce": nonce})
			grace = time.After(m.opts.Grace)
			ctx = context.Background()
		case <-grace:
			killed = true
			_ = p.Close()
			break wait
		}
	}
	if ok {
		// The driver marks standard error before it answers.
		select {
		case <-gotErr:
		case <-p.done:
		}
	}
	if ok && !timedOut && time.Since(start) >= limits.Duration() {
		// The answer came as the time limit passed: the timer may have
		// fired and lost the select to it. A driver that stops a cell at
		// the limit itself (node's V8 timeout) answers then, and that
		// cell ran out of time all the same.
		timedOut = true
	}
	stdout, cutOut := p.out.end()
	stderr, cutErr := p.err.end()
	res.Stdout, res.Stderr = string(stdout), string(stderr)
	res.Truncated = cutOut || cutErr
	res.ExecutionTime = round3(time.Since(start).Seconds())
	res.ResourceUsage.ExecutionTimeSeconds = res.ExecutionTime

	var a answer
	if ok && line != nil {
		if err := json.Unmarshal(line, &a); err != nil {
			ok = false
			m.log.Warn("an interpreter answered what is not its answer; it is ended", "error", err)
			_ = p.Close()
		}
	} else if ok {
		// The answer was over its bound.
		ok = false
		_ = p.Close()
	}
	switch {
	case killed:
		res.Status, res.ExitCode = execute.StatusTimeout, execute.ExitTimeout
		res.ErrorMessage = msg("Execution timed out after %g seconds; the cell did not stop when interrupted, so the interpreter was ended: the next call starts a fresh one, its variables lost (the session's files stay).", limits.TimeLimit)
	case !ok:
		m.died(p, res, limits)
	case a.Interrupted && timedOut:
		res.Status, res.ExitCode = execute.StatusTimeout, execute.ExitTimeout
		res.ErrorMessage = msg("Execution timed out after %g seconds; the cell was interrupted and the interpreter's state is kept.", limits.TimeLimit)
	case a.Error != nil:
		res.Status, res.ExitCode = execute.StatusExecutionError, 1
		res.ErrorMessage = msg("%s", *a.Error)
	default:
		res.Status = execute.StatusSuccess
	}
	if ok {
		res.Value = a.Value
		for _, d := range a.Display {
			switch {
			case d.MIME == "application/json":
				if !json.Valid([]byte(d.Data)) {
					continue
				}
			case !displayMIME[d.MIME]:
				continue
			default:
				if _, err := base64.StdEncoding.DecodeString(d.Data); err != nil {
					continue
				}
			}
			res.Display = append(res.Display, execute.Display{MIME: d.MIME, Data: d.Data})
		}
	}
}

// displayMIME are the image types a display item may have, in base64;
// "application/json" is the other type, as JSON text.
var displayMIME = map[string]bool{"image/png": true, "image/svg+xml": true}

// died fills res for an interpreter that ended during the call.
func (m *Manager) died(p *proc, res *execute.Result, limits execute.ExecutionLimits) {
	_ = p.Close()
	res.Status, res.ExitCode = execute.StatusExecutionError, execute.ExitSetupError
	why := "it exited"
	switch {
	case p.runErr != nil:
		res.Status = execute.StatusSetupError
		why = "the sandbox failed: " + p.runErr.Error()
	case p.sr != nil && (p.sr.MemoryExceeded || p.sr.Status == sandbox.StatusMemoryLimit):
		res.MemoryExceeded = true
		why = fmt.Sprintf("it exceeded the memory limit of %d MB", p.limits.MemoryLimit)
	case p.sr != nil && p.sr.Status == sandbox.StatusTimeLimit:
		why = "it reached the longest life of an interpreter"
	case p.sr != nil && p.sr.Signal != 0:
		why = fmt.Sprintf("it was killed by signal %d", int(p.sr.Signal))
	case p.sr != nil:
		why = fmt.Sprintf("it exited with code %d", p.sr.ExitCode)
	}
	if p.sr != nil && p.sr.Signal == 0 && p.runErr == nil {
		res.ExitCode = p.sr.ExitCode
	} else if p.sr != nil && p.sr.Signal != 0 {
		res.ExitCode = 128 + int(p.sr.Signal)
	}
	res.ErrorMessage = msg("The interpreter ended: %s. The next call starts a fresh one, its variables lost (the session's files stay).", why)
}

func msg(format string, a ...any) *string {
	s := fmt.Sprintf(format, a...)
	return &s
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// warnings are the result's warnings about its output's encoding.
func warnings(res *execute.Result) []string {
	var w []string
	for _, s := range []struct{ name, text string }{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
		if !isUTF8(s.text) {
			w = append(w, execute.NotUTF8Warning(s.name))
		}
	}
	return w
}

func isUTF8(s string) bool { return utf8.ValidString(s) }
