package execute

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/multifile"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
)

// Bounds on a request, so that one request cannot make the executor hold
// an unbounded amount of memory.
const (
	MaxCodeBytes  = 16 << 20
	MaxStdinBytes = 16 << 20
)

// DefaultSampleInterval is how often the CPU time and memory of a run are
// sampled for ResourceUsage.
const DefaultSampleInterval = 50 * time.Millisecond

// Options configures an Executor. The zero value is usable.
type Options struct {
	// Logger receives debug logs of each execution; nil discards them.
	Logger *slog.Logger
	// TempDir is the host directory under which each execution's
	// workspace is created; empty means os.TempDir().
	TempDir string
	// SampleInterval is the resource sampling interval; zero means
	// DefaultSampleInterval.
	SampleInterval time.Duration
	// CompileLimits bound the compile step; zero fields take
	// runner.DefaultCompileLimits (see runner.CompileLimits).
	CompileLimits sandbox.Limits
	// SandboxLimits holds the limits a request does not name: FileSize,
	// OpenFiles, WorkspaceSize and TmpSize of the run. Zero fields take
	// sandbox.DefaultLimits; other fields are ignored. WorkspaceSize also
	// bounds the compile step, which shares the workspace.
	SandboxLimits sandbox.Limits
	// KeepWorkspaceDirs keeps the directories of the workspaces it has
	// removed for later ones to be mounted on (a long-lived server's
	// choice: making and removing a directory per run on a disk file
	// system costs as much as the workspace's mount). Close removes them.
	KeepWorkspaceDirs bool
}

// Request is one execution: the arguments of ExecuteWithLimits and the
// body of POST /v1/run.
type Request struct {
	// Language is a language id or alias of the table ("python3", "js").
	Language string
	// Code is the source code; it may not be empty.
	Code string
	// Stdin is the program's standard input; empty means /dev/null.
	Stdin string
	// StdinReader, when set, feeds the program's standard input after
	// Stdin, as the program reads it: an interactive client's input. Its
	// end closes the program's standard input. The run does not wait for
	// it: a Read still blocked when Execute returns is the caller's to
	// end (by closing what it reads from). Its length is the caller's to
	// bound.
	StdinReader io.Reader
	// Limits bound the run; zero fields take DefaultLimits'.
	Limits ExecutionLimits
	// SessionID, when set, must match ^[A-Za-z0-9_-]{1,64}$ and is echoed
	// in the result. The executor keeps no sessions itself: the session
	// package maps a session to its Workspace.
	SessionID *string
	// SessionTTL, when not zero, sets the idle timeout of the session
	// SessionID names: it ends once unused for this long. The session
	// package checks it against its maximum; it needs a SessionID.
	SessionTTL time.Duration
	// Workspace, when set, is an existing host directory used as the
	// program's workspace instead of a fresh one, so that its files
	// persist between executions (a session's). It is neither created nor
	// removed here, and what it holds is treated as hostile. Files that
	// were there before the run are not listed as artifacts.
	Workspace string
	// Files are written beneath the workspace with the code before the
	// program is compiled or run (see package multifile); Entry names the
	// file to run or compile, empty meaning the code's (main.<ext>). Code
	// may be empty when Files and Entry are given.
	Files []multifile.File
	Entry string
	// Artifacts asks for the contents of the files the program leaves.
	Artifacts ArtifactOptions
	// Args are the program's arguments, appended to its language's run
	// argv (see lang.CheckArgs for the bounds).
	Args []string
	// CompilerFlags are added to the compile step of a compiled language,
	// from its allow-list (see lang.Language.CheckCompilerFlags); an
	// interpreted language refuses any.
	CompilerFlags []string
	// Env adds variables to the program's environment (see
	// lang.Language.CheckEnv for the names refused).
	Env map[string]string
	// Stdout and Stderr, when set, receive the program's output as it is
	// produced (at most MaxOutputChars bytes each), in addition to the
	// copy in the Result. A compiler's output goes to Stderr when the
	// compilation fails.
	Stdout, Stderr io.Writer
	// Mode is "" for a program run once, or ModeInterpreter: Code is a
	// cell run in the live interpreter of the session SessionID names
	// (package interp), which keeps its variables between calls.
	Mode string
}

// Executor runs requests in one sandbox backend with one language table.
// It is safe for concurrent use.
type Executor struct {
	backend        sandbox.Backend
	langs          *lang.Table
	build          *runner.Builder
	log            *slog.Logger
	tempDir        string
	sampleInterval time.Duration
	compileLimits  sandbox.Limits
	sandboxLimits  sandbox.Limits
	// spares, with Options.KeepWorkspaceDirs as root, keeps the
	// directories of removed workspaces.
	spares *capws.Spares
	// removing holds a place for each workspace being removed after its
	// result went out (at most maxRemoving at once); pending counts
	// them for Close, and closed (under removeMu) makes removals
	// synchronous again.
	removing chan struct{}
	pending  sync.WaitGroup
	removeMu sync.Mutex
	closed   bool
	// beforeRemove, when set (by tests), runs before a background
	// removal.
	beforeRemove func()
	// inspects is set when the backend hands a run's private workspace
	// back (sandbox.WorkspaceInspector): an interpreted program then runs
	// there, and its artifacts are read from it, with no host workspace
	// to make and remove.
	inspects bool
}

// maxRemoving bounds the workspaces being removed in the background: past
// it a run removes its own before it returns, so a flood of runs cannot
// pile up mounts.
const maxRemoving = 64

// New returns an Executor that runs programs in backend with the recipes
// of langs.
func New(backend sandbox.Backend, langs *lang.Table, opts Options) *Executor {
	e := &Executor{
		backend:        backend,
		langs:          langs,
		log:            opts.Logger,
		tempDir:        opts.TempDir,
		sampleInterval: opts.SampleInterval,
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if wi, ok := backend.(sandbox.WorkspaceInspector); ok {
		e.inspects = wi.InspectsWorkspace()
	}
	if e.tempDir == "" {
		e.tempDir = os.TempDir()
	}
	if opts.KeepWorkspaceDirs && capws.Supported() {
		e.spares = capws.NewSpares(e.tempDir, workspacePrefix)
		e.removing = make(chan struct{}, maxRemoving)
	}
	// The workspaces of runs whose process was killed still hold their
	// memory (as root) or their directory (without root, a keeper's
	// mount went with it).
	if n := capws.Sweep(e.tempDir, workspacePrefix); n > 0 {
		e.log.Info("removed workspaces of processes that died", "count", n)
	}
	if e.sampleInterval == 0 {
		e.sampleInterval = DefaultSampleInterval
	}
	sl := opts.SandboxLimits
	e.sandboxLimits = sandbox.Limits{FileSize: sl.FileSize, OpenFiles: sl.OpenFiles,
		WorkspaceSize: sl.WorkspaceSize, TmpSize: sl.TmpSize}
	// The compile step shares the run's workspace, so it has its size.
	e.build = runner.NewBuilder(backend, langs, runner.BuilderOptions{
		CompileLimits: sandbox.Limits{WorkspaceSize: sl.WorkspaceSize}.Overlay(opts.CompileLimits),
		Logger:        e.log,
	})
	e.compileLimits = e.build.CompileLimits()
	return e
}

// Execute runs one request. It returns an error only when it refuses the
// request: ErrEmptyCode, ErrCodeTooLarge, ErrStdinTooLarge,
// ErrInvalidSessionID, ErrInvalidLimits (a *LimitError),
// ErrInvalidArtifacts, a *multifile.Error for its files or entry, an
// error wrapping lang.ErrUnknownLanguage, or a *lang.OptionError (its
// args, compiler flags or env), or when ctx was cancelled. Whatever
// happens to an accepted request, a failing sandbox included, is in the
// Result.
func (e *Executor) Execute(ctx context.Context, req Request) (*Result, error) {
	limits, l, src, err := e.check(req)
	if err != nil {
		return nil, err
	}
	res := &Result{
		Language:      req.Language,
		Backend:       e.backend.Name(),
		LimitsApplied: applied(limits),
	}
	if req.SessionID != nil {
		id := *req.SessionID
		res.SessionID = &id
	}
	start := time.Now()
	err = e.execute(ctx, req, l, src, limits, res)
	if ctxErr := ctx.Err(); ctxErr != nil {
		// The caller gave up: what the sandbox reports about a program it
		// was told to kill is not a verdict on the program.
		return nil, fmt.Errorf("execution cancelled: %w", ctxErr)
	}
	if err != nil {
		e.setupError(res, err)
	}
	res.Warnings = append(res.Warnings, textWarnings(res)...)
	e.log.Debug("execution finished", "language", req.Language, "backend", res.Backend,
		"status", res.Status, "exit_code", res.ExitCode, "duration", time.Since(start))
	return res, nil
}

// check validates a request, finds its language and places its files.
func (e *Executor) check(req Request) (ExecutionLimits, *lang.Language, multifile.Source, error) {
	if err := checkRunMode(req); err != nil {
		return ExecutionLimits{}, nil, multifile.Source{}, err
	}
	src, err := CheckRequest(req)
	if err != nil {
		return ExecutionLimits{}, nil, src, err
	}
	limits := req.Limits.WithDefaults()
	l, err := e.langs.Lookup(req.Language)
	if err != nil {
		return ExecutionLimits{}, nil, src, err
	}
	if err := runner.CheckOptions(l, req.options(src)); err != nil {
		return ExecutionLimits{}, nil, src, err
	}
	if src.HasFiles() {
		// The files must fit the language: the build refuses them the
		// same way, but as a request's fault this is the place to say so.
		if _, err := l.Place(src, runner.Reserved(l)); err != nil {
			return ExecutionLimits{}, nil, src, err
		}
	}
	return limits, l, src, nil
}

// checkRunMode refuses a request of another mode than a program run once:
// a cell of an interpreter runs in its session's live interpreter, which
// a session store keeps (session.Store.Execute), and is never run here as
// a program.
func checkRunMode(req Request) error {
	if req.Mode == "" {
		return nil
	}
	return fmt.Errorf("%w %q: this executor runs a program once; an interpreter's cells run through a session store that keeps the interpreter",
		ErrInvalidMode, req.Mode)
}

// CheckRequest checks what can be checked of a request without its
// language (front ends refuse such requests before they wait for a slot)
// and returns its program. The errors are those of Execute.
func CheckRequest(req Request) (multifile.Source, error) {
	files, err := multifile.Decode(req.Files)
	if err != nil {
		return multifile.Source{}, err
	}
	src := multifile.Source{Code: req.Code, Files: files, Entry: req.Entry}
	switch {
	case strings.TrimSpace(req.Code) == "" && (len(files) == 0 || req.Entry == ""):
		return src, ErrEmptyCode
	case len(req.Code) > MaxCodeBytes:
		return src, fmt.Errorf("%w: %d bytes, at most %d", ErrCodeTooLarge, len(req.Code), MaxCodeBytes)
	case len(req.Stdin) > MaxStdinBytes:
		return src, fmt.Errorf("%w: %d bytes, at most %d", ErrStdinTooLarge, len(req.Stdin), MaxStdinBytes)
	}
	if req.SessionID != nil {
		if err := ValidateSessionID(*req.SessionID); err != nil {
			return src, err
		}
	}
	if src.HasFiles() && strings.TrimSpace(src.Code) == "" {
		// Without code the entry must be one of the files, whatever the
		// language.
		if _, err := multifile.Resolve(src, "", nil); err != nil {
			return src, err
		}
	}
	if err := req.Artifacts.Validate(); err != nil {
		return src, err
	}
	// The rules of every language; the language's own (its compiler
	// flags, its recipe's variables) are checked once it is known.
	if err := lang.CheckArgs(req.Args); err != nil {
		return src, err
	}
	if err := lang.CheckEnv(req.Env); err != nil {
		return src, err
	}
	return src, req.Limits.WithDefaults().Validate()
}

// options are what the request adds to its language's recipe, its files
// (decoded into src) among them.
func (req Request) options(src multifile.Source) judge.ProgramOptions {
	return judge.ProgramOptions{Files: src.Files, Entry: src.Entry,
		CompilerFlags: req.CompilerFlags, Args: req.Args, Env: req.Env}
}

// execute builds the program (compiling it when the language is
// compiled) and runs it, filling res. An error means the sandbox could not
// do its part.
func (e *Executor) execute(ctx context.Context, req Request, l *lang.Language, src multifile.Source, limits ExecutionLimits, res *Result) error {
	if err := e.build.Check(ctx, l); err != nil {
		return err
	}

	ws := req.Workspace
	// An interpreted program needs nothing on the host: where the
	// backend hands its private workspace back, it runs there.
	private := ws == "" && e.inspects && !l.Compiled
	if ws == "" && !private {
		d, err := e.workspace(l)
		if err != nil {
			return err
		}
		if d != nil {
			ws = d.Path
			defer e.removeWorkspace(d)
		}
	}

	prog, cr, err := e.build.Build(ctx, l, src.Code, runner.BuildOptions{Workspace: ws, SampleInterval: e.sampleInterval,
		Options: req.options(src)})
	if err != nil {
		return err
	}
	if prog == nil {
		e.compileFailed(res, cr, req.Stderr)
		return nil
	}
	defer func() { _ = prog.Close() }()
	if cr != nil {
		res.Warnings = append(res.Warnings, cr.Warnings...)
	}

	var stdin []byte
	if req.Stdin != "" {
		stdin = []byte(req.Stdin)
	}
	spec := prog.Spec(stdin, e.sandboxLimits.Overlay(limits.sandboxLimits()).WithDefaults())
	if req.StdinReader != nil {
		spec.Stdin = io.MultiReader(strings.NewReader(req.Stdin), req.StdinReader)
	}
	spec.SampleInterval = e.sampleInterval
	spec.Stdout, spec.Stderr = req.Stdout, req.Stderr

	// Everything in the workspace before the run is the executor's own
	// (the source, the compiled program), never an artifact.
	own := map[string]bool{}
	if ws != "" {
		if own, err = listFiles(ws); err != nil {
			return err
		}
	}
	for _, f := range spec.Files {
		own[f.Path] = true
	}
	lim := DefaultArtifactLimits
	lim.ContentBytes = req.Artifacts.contentBytes()
	skip := func(rel string) bool { return own[rel] }
	var artifacts []Artifact
	var listErr error
	if private {
		spec.Inspect = func(root *os.File) {
			artifacts, listErr = CollectArtifactsIn(root, skip, lim)
		}
	}

	sr, err := e.backend.Run(ctx, spec)
	if err != nil {
		return err
	}
	e.verdict(res, sr, limits)
	switch {
	case ws != "":
		artifacts, listErr = CollectArtifactsWith(ws, skip, lim)
	case !private:
		return nil // the sandbox's private workspace, out of reach: nothing to list
	}
	res.Artifacts = artifacts
	if listErr != nil {
		// The program's result stands; a workspace it made unlistable only
		// costs it its artifact list.
		e.log.Warn("unable to list artifacts", "error", listErr)
	}
	return nil
}

// workspace makes the host workspace of a run without one of its own: a
// tmpfs capped at the workspace size, so that the program cannot fill the
// host's disk through it. Without root an interpreted program runs in the
// sandbox's private workspace, which the backend caps in the sandbox's own
// namespaces (nil, nil: its files are not listed as artifacts); a compiled
// one, whose compile step hands the program over in the workspace, gets a
// tmpfs the workspace keeper mounts in a user namespace of its own
// (capws.NewKept), and is refused where even that cannot be mounted.
func (e *Executor) workspace(l *lang.Language) (*capws.Dir, error) {
	size := min(e.runWorkspaceSize(), e.compileLimits.WorkspaceSize)
	if !capws.Supported() && !l.Compiled {
		return nil, nil
	}
	var d *capws.Dir
	var err error
	if e.spares != nil {
		d, err = e.spares.New(size, 0)
	} else {
		d, err = newWorkspace(e.tempDir, workspacePrefix, size, 0)
	}
	switch {
	case err == nil:
		return d, nil
	case errors.Is(err, capws.ErrUnsupported) && !l.Compiled:
		return nil, nil
	case errors.Is(err, capws.ErrUnsupported):
		return nil, fmt.Errorf("%w: %s is compiled in a host workspace, which must be size-capped: %w; run as root, allow user namespaces, or use an interpreted language", sandbox.ErrUnavailable, l.ID, err)
	}
	return nil, err
}

// removeWorkspace removes a run's workspace once the run is over and its
// files read. A long-lived executor (Options.KeepWorkspaceDirs) does it
// after the result has gone out: unmounting the workspace waits for the
// kernel's RCU grace period, which the caller need not wait for. Nothing
// of the run is left to reach it then, and the next run has a workspace
// of its own.
func (e *Executor) removeWorkspace(d *capws.Dir) {
	if e.removing != nil && e.removeLater(d) {
		return
	}
	e.remove(d)
}

// removeLater starts d's removal in the background, unless the executor
// is closed or maxRemoving are under way.
func (e *Executor) removeLater(d *capws.Dir) bool {
	e.removeMu.Lock()
	defer e.removeMu.Unlock()
	if e.closed {
		return false
	}
	select {
	case e.removing <- struct{}{}:
	default:
		return false
	}
	e.pending.Add(1)
	go func() {
		defer e.pending.Done()
		defer func() { <-e.removing }()
		if e.beforeRemove != nil {
			e.beforeRemove()
		}
		e.remove(d)
	}()
	return true
}

func (e *Executor) remove(d *capws.Dir) {
	if err := d.Remove(); err != nil {
		e.log.Warn("unable to remove a workspace", "path", d.Path, "error", err)
	}
}

// Close waits for the workspaces being removed, then removes the
// workspace directories kept for later runs (Options.KeepWorkspaceDirs).
// The executor still runs afterwards, making and removing a directory per
// run.
func (e *Executor) Close() error {
	if e.spares == nil {
		return nil
	}
	e.removeMu.Lock()
	e.closed = true
	e.removeMu.Unlock()
	e.pending.Wait()
	return e.spares.Close()
}

// workspacePrefix starts the names of the workspaces the executor makes.
const workspacePrefix = "coderunner-run-"

// newWorkspace makes a capped host workspace; tests replace it to play a
// process that cannot mount one.
var newWorkspace = capws.NewKept

// runWorkspaceSize is the workspace cap of a run.
func (e *Executor) runWorkspaceSize() int64 {
	return e.sandboxLimits.WithDefaults().WorkspaceSize
}

// verdict translates the backend's result of the run step into res.
func (e *Executor) verdict(res *Result, sr *sandbox.Result, limits ExecutionLimits) {
	res.Stdout = string(sr.Stdout)
	res.Stderr = string(sr.Stderr)
	res.measured(sr, StageRun)

	switch sr.Status {
	case sandbox.StatusOK:
		res.Status = StatusSuccess
	case sandbox.StatusNonzeroExit:
		res.Status = StatusExecutionError
		res.ErrorMessage = message("Process exited with code %d.", sr.ExitCode)
	case sandbox.StatusSignaled:
		res.Status = StatusExecutionError
		res.ErrorMessage = message("Process was killed by %s.", signalDesc(sr.Signal))
	case sandbox.StatusTimeLimit:
		res.Status = StatusTimeout
		res.ExitCode = ExitTimeout
		res.ErrorMessage = message("Execution timed out after %s seconds.", seconds(limits.TimeLimit))
	case sandbox.StatusMemoryLimit:
		res.Status = StatusExecutionError
		res.ErrorMessage = message("Memory limit of %d MB exceeded.", limits.MemoryLimit)
	case sandbox.StatusOutputLimit:
		res.Status = StatusExecutionError
		res.Truncated = true
		res.ErrorMessage = message("output limit exceeded")
	default:
		res.Status = StatusSetupError
		res.ExitCode = ExitSetupError
		res.ErrorMessage = message("sandbox reported an unknown status %q", sr.Status)
	}
}

// measured records in res what the sandbox measured of the step stage:
// its wall time, usage, truncation, memory verdict, warnings, status and
// exit code.
func (res *Result) measured(sr *sandbox.Result, stage string) {
	res.ExecutionTime = round(sr.WallTime.Seconds(), 3)
	res.ResourceUsage = usage(sr)
	res.Truncated = sr.Truncated()
	res.MemoryExceeded = sr.MemoryExceeded || sr.Status == sandbox.StatusMemoryLimit
	res.Warnings = append(res.Warnings, sr.Warnings...)
	res.Verdict = sr.Status
	res.Stage = stage
	res.ExitCode = exitCode(sr)
}

// compileFailed fills res for a compile step that did not succeed.
func (e *Executor) compileFailed(res *Result, cr *sandbox.Result, stderr io.Writer) {
	out := string(cr.Stdout)
	if len(cr.Stderr) > 0 {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += string(cr.Stderr)
	}
	res.Stderr = out
	res.measured(cr, StageCompile)
	res.Status = StatusExecutionError
	switch cr.Status {
	case sandbox.StatusNonzeroExit:
		res.ErrorMessage = message("compilation failed")
	case sandbox.StatusTimeLimit:
		res.ExitCode = ExitTimeout
		res.ErrorMessage = message("compilation failed: timed out after %s seconds", seconds(e.compileLimits.WallTime.Seconds()))
	case sandbox.StatusMemoryLimit:
		res.ErrorMessage = message("compilation failed: memory limit of %d MB exceeded", e.compileLimits.Memory/sandbox.MiB)
	case sandbox.StatusOutputLimit:
		res.ErrorMessage = message("compilation failed: output limit exceeded")
	case sandbox.StatusSignaled:
		res.ErrorMessage = message("compilation failed: compiler killed by %s", signalDesc(cr.Signal))
	default:
		res.ErrorMessage = message("compilation failed: sandbox reported status %q", cr.Status)
	}
	if stderr != nil && out != "" {
		_, _ = io.WriteString(stderr, out)
	}
}

// SetupErrorResult is the result of a request that no sandbox could run,
// for callers that fail before they have an Executor (no backend works
// here): status setup_error, exit code -1, and err in the message.
func SetupErrorResult(req Request, backend string, err error) *Result {
	res := &Result{
		Language:      req.Language,
		Backend:       backend,
		LimitsApplied: applied(req.Limits.WithDefaults()),
	}
	if req.SessionID != nil {
		id := *req.SessionID
		res.SessionID = &id
	}
	(&Executor{log: slog.New(slog.DiscardHandler)}).setupError(res, err)
	return res
}

// setupError turns a sandbox failure into a setup_error result.
func (e *Executor) setupError(res *Result, err error) {
	res.Status = StatusSetupError
	res.ExitCode = ExitSetupError
	res.ErrorMessage = message("sandbox failed: %v", err)
	res.Stage = ""
	res.Verdict = ""
	e.log.Debug("sandbox failed", "error", err)
}

// exitCode is the code a result reports: the program's own, or 128+N for
// signal N, as a shell would.
func exitCode(sr *sandbox.Result) int {
	if sr.Signal != 0 {
		return exitSignalBase + int(sr.Signal)
	}
	return sr.ExitCode
}

// signalDesc is "signal 9 (SIGKILL)".
func signalDesc(s syscall.Signal) string {
	if name := signalName(s); name != "" {
		return fmt.Sprintf("signal %d (%s)", int(s), name)
	}
	return fmt.Sprintf("signal %d", int(s))
}

func message(format string, a ...any) *string {
	s := fmt.Sprintf(format, a...)
	return &s
}

// seconds formats a time limit without a needless fraction: "30", "1.5".
func seconds(s float64) string { return fmt.Sprintf("%g", s) }

// textWarnings says which output streams are not valid UTF-8: a JSON
// string cannot hold their bytes as they are, and shows U+FFFD for each
// byte that is not UTF-8 (in the result and in the streamed chunks
// alike), so a caller reading JSON is told rather than left to guess.
// Go callers have the bytes themselves in Stdout and Stderr.
func textWarnings(res *Result) []string {
	var w []string
	for _, s := range []struct{ name, text string }{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
		if !utf8.ValidString(s.text) {
			w = append(w, NotUTF8Warning(s.name))
		}
	}
	return w
}

// NotUTF8Warning is the warning of a result whose stream ("stdout" or
// "stderr") is not valid UTF-8. It concerns the result's JSON only: a
// caller that passes the bytes on as they are (run without --json) has
// nothing to warn of.
func NotUTF8Warning(stream string) string {
	return stream + " is not valid UTF-8: in JSON each byte that is not shows as U+FFFD"
}
