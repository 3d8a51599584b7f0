package invoke

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
)

//go:embed wrappers/handler.py
var pythonWrapper []byte

//go:embed wrappers/handler.js
var javascriptWrapper []byte

// wrapperDir holds the invoker's own files in the workspace. It is hidden,
// so never listed as artifacts.
const wrapperDir = ".coderunner"

// DefaultMaxOutputBytes caps stdout and stderr, each: 10 MB.
const DefaultMaxOutputBytes = 10 << 20

// DefaultLimits are the limits of a run that a request does not set. The
// wall and CPU time come from the request's timeout.
var DefaultLimits = sandbox.Limits{
	Memory:      256 * sandbox.MiB,
	CPUs:        1,
	Processes:   64,
	OutputBytes: DefaultMaxOutputBytes,
}

// ErrShutdown is the cause an invoker's caller gives the context of
// runs it cancels because the service is stopping; those runs are
// reported crashed.
var ErrShutdown = errors.New("executor shutting down")

// Options configures an Invoker. The zero value is usable.
type Options struct {
	// Logger receives the invoker's logs; nil discards them.
	Logger *slog.Logger
	// WorkDir is the host directory under which each run's workspace is
	// made; empty means os.TempDir().
	WorkDir string
	// Limits are the limits of a run; zero fields take DefaultLimits,
	// then sandbox.DefaultLimits. WallTime and CPUTime are ignored: the
	// request's timeout sets both.
	Limits sandbox.Limits
	// NoTmpfs is ignored: a host workspace is always a size-capped tmpfs
	// (see the capws package), which every backend requires.
	//
	// Deprecated: workspaces on WorkDir's file system had no size cap.
	NoTmpfs bool
}

// Invoker runs the /execute service's executions in one sandbox backend.
// It is safe for concurrent use.
type Invoker struct {
	backend sandbox.Backend
	langs   *lang.Table
	build   *runner.Builder
	log     *slog.Logger
	workDir string
	limits  sandbox.Limits
	// nonce draws the tag of a run's result block; tests replace it.
	nonce    func() string
	warnOnce sync.Once
	// inspects is set when the backend hands a run's private workspace
	// back (sandbox.WorkspaceInspector): an interpreted program runs
	// there and its artifacts are read from it, with no host workspace.
	inspects bool
}

// New returns an Invoker that runs code in backend with the recipes of
// langs.
func New(backend sandbox.Backend, langs *lang.Table, opts Options) *Invoker {
	e := &Invoker{
		backend: backend,
		langs:   langs,
		log:     opts.Logger,
		workDir: opts.WorkDir,
		nonce:   newNonce,
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if wi, ok := backend.(sandbox.WorkspaceInspector); ok {
		e.inspects = wi.InspectsWorkspace()
	}
	if e.workDir == "" {
		e.workDir = os.TempDir()
	}
	if capws.Supported() {
		// The workspaces of runs whose process was killed still hold
		// their memory.
		if n := capws.Sweep(e.workDir, workspacePrefix); n > 0 {
			e.log.Info("removed workspaces of processes that died", "count", n)
		}
	}
	e.limits = DefaultLimits.Overlay(opts.Limits).WithDefaults()
	e.build = runner.NewBuilder(backend, langs, runner.BuilderOptions{Logger: e.log})
	return e
}

// Check makes sure workspaces can be made in WorkDir, so that a service
// whose work directory is missing or read-only fails at start rather than
// on every request.
func (e *Invoker) Check() error {
	ws, err := os.MkdirTemp(e.workDir, "coderunner-check-") //nolint:forbidigo // the service's work directory, host-owned
	if err != nil {
		return fmt.Errorf("unable to make workspaces in %s: %w", e.workDir, err)
	}
	if err := os.Remove(ws); err != nil { //nolint:forbidigo // the empty directory just made
		return fmt.Errorf("unable to remove a workspace in %s: %w", e.workDir, err)
	}
	return nil
}

// Backend is the name of the sandbox backend the invoker runs code in.
func (e *Invoker) Backend() string { return e.backend.Name() }

// Run executes a request that DecodeRequest accepted. It always returns a
// result: whatever happens, a failing sandbox included, is in its status.
// When ctx is cancelled the program is killed and the result is crashed,
// its error naming the cancellation's cause.
func (e *Invoker) Run(ctx context.Context, req Request) *Result {
	log := e.log.With("execution_id", req.ExecutionID)
	start := time.Now()
	res, err := e.run(ctx, req, log)
	switch {
	case ctx.Err() != nil:
		res = CrashedResult(req.ExecutionID, fmt.Sprintf("execution interrupted: %v", context.Cause(ctx)))
	case err != nil:
		log.Error("execution failed", "event", "sandbox_error", "error", err)
		res = ErrorResult(req.ExecutionID, fmt.Sprintf("sandbox failed: %v", err))
	}
	log.Info("execution finished", "event", "execution_finished", "language", req.Language,
		"status", res.Status, "exit_code", res.ExitCode, "artifacts", len(res.Artifacts),
		"metrics", res.Metrics, "elapsed_ms", time.Since(start).Milliseconds())
	return res
}

// run does the work of Run; an error means the sandbox failed.
func (e *Invoker) run(ctx context.Context, req Request, log *slog.Logger) (*Result, error) {
	l, err := e.langs.Lookup(req.Language)
	if err != nil {
		return nil, err
	}
	if err := e.build.Check(ctx, l); err != nil {
		return nil, err
	}

	// An interpreted program needs nothing on the host where the backend
	// hands its private workspace back.
	private := e.inspects && !l.Compiled
	ws := ""
	if !private {
		var release func()
		ws, release, err = e.workspace(log)
		if err != nil {
			return nil, err
		}
		defer release()
	}

	prog, cr, err := e.build.Build(ctx, l, req.Code, runner.BuildOptions{Workspace: ws})
	if err != nil {
		return nil, err
	}
	if prog == nil {
		return nil, fmt.Errorf("compile step: compiler status %s", cr.Status)
	}
	defer func() { _ = prog.Close() }()

	var stdin []byte
	var nonce string
	if req.usesHandler() {
		nonce = e.nonce()
		stdin = header(nonce, req.Event)
	}
	stdin = append(stdin, req.Stdin...)

	limits := e.limits
	limits.WallTime = req.Duration()
	limits.CPUTime = req.Duration()
	spec := prog.Spec(stdin, limits)
	source := l.SourceName(req.Code)
	if req.usesHandler() {
		// The wrapper is the program; it loads the code from its source.
		wrapper, name := pythonWrapper, "wrapper.py"
		if l.ID == "javascript" {
			wrapper, name = javascriptWrapper, "wrapper.js"
		}
		rel := path.Join(wrapperDir, name)
		spec.Files = append(spec.Files, sandbox.File{Path: rel, Content: wrapper, Mode: 0o644})
		spec.Args = append(l.RunArgs(lang.Vars{Source: path.Join(sandbox.WorkspaceDir, rel)}), prog.Source())
	}
	var artifacts []execute.Artifact
	var listErr error
	own := map[string]bool{source: true}
	skip := func(rel string) bool { return own[rel] }
	if private {
		spec.Inspect = func(root *os.File) {
			artifacts, listErr = execute.CollectArtifactsIn(root, skip, execute.ArtifactLimits{})
		}
	}
	sr, err := e.backend.Run(ctx, spec)
	if err != nil {
		return nil, err
	}
	res := e.verdict(req, sr, nonce, log)
	if ws != "" {
		artifacts, listErr = execute.CollectArtifactsWith(ws, skip, execute.ArtifactLimits{})
	}
	res.Artifacts = artifacts
	if err := listErr; err != nil {
		// The program's result stands; a workspace it made unlistable
		// only costs it its artifact list.
		log.Warn("unable to list artifacts", "event", "artifacts_failed", "error", err)
	}
	if res.Artifacts == nil {
		res.Artifacts = []execute.Artifact{}
	}
	return res, nil
}

// verdict translates the sandbox's result into the /execute result.
func (e *Invoker) verdict(req Request, sr *sandbox.Result, nonce string, log *slog.Logger) *Result {
	stdout := sr.Stdout
	var b *block
	if nonce != "" {
		stdout, b = extractBlock(stdout, nonce)
	}
	res := &Result{
		ExecutionID:   req.ExecutionID,
		Stdout:        string(stdout),
		Stderr:        string(sr.Stderr),
		ExitCode:      sr.ExitCode,
		ExecutionTime: round(sr.WallTime.Seconds(), 3),
		ReturnValue:   nil,
		Metrics: Metrics{
			DurationMS:   round(float64(sr.WallTime)/float64(time.Millisecond), 3),
			CPUTimeMS:    round(float64(sr.CPUTime)/float64(time.Millisecond), 3),
			PeakMemoryMB: round(float64(sr.PeakMemory)/float64(sandbox.MiB), 2),
		},
	}
	if sr.Signal != 0 {
		res.ExitCode = exitSignalBase + int(sr.Signal)
	}
	for stream, cut := range map[string]bool{"stdout": sr.StdoutTruncated, "stderr": sr.StderrTruncated} {
		if cut {
			log.Warn("output truncated", "event", "output_truncated", "stream", stream, "cap_bytes", e.limits.OutputBytes)
		}
	}
	fail := func(status Status, reason, msg string) {
		res.Status = status
		res.Reason = reason
		res.Error = &msg
	}
	switch sr.Status {
	case sandbox.StatusOK:
		res.Status = StatusSuccess
		if b != nil && b.OK {
			var v bytes.Buffer
			if json.Compact(&v, b.Value) == nil {
				res.ReturnValue = v.Bytes()
			}
		}
	case sandbox.StatusNonzeroExit:
		fail(StatusFailed, ReasonNonzeroExit, fmt.Sprintf("process exited with code %d", sr.ExitCode))
	case sandbox.StatusSignaled:
		fail(StatusFailed, ReasonSignal, fmt.Sprintf("process killed by signal %d", int(sr.Signal)))
	case sandbox.StatusTimeLimit:
		msg := fmt.Sprintf("timed out after %d s", req.Timeout)
		if sr.TimeLimit == "cpu" {
			msg = fmt.Sprintf("timed out after %d s of CPU time", req.Timeout)
		}
		if res.Stderr != "" && !strings.HasSuffix(res.Stderr, "\n") {
			res.Stderr += "\n"
		}
		res.Stderr += "Execution " + msg + "\n"
		res.ExitCode = ExitNone
		fail(StatusTimeout, ReasonTimeout, "execution "+msg)
	case sandbox.StatusMemoryLimit:
		fail(StatusFailed, ReasonMemoryLimit, fmt.Sprintf("memory limit of %d MB exceeded", e.limits.Memory/sandbox.MiB))
	case sandbox.StatusOutputLimit:
		fail(StatusFailed, ReasonOutputLimit, fmt.Sprintf("output limit exceeded: each stream is capped at %d bytes", e.limits.OutputBytes))
	default:
		res.ExitCode = ExitNone
		fail(StatusError, ReasonSandboxError, fmt.Sprintf("sandbox reported an unknown status %q", sr.Status))
	}
	if b != nil && !b.OK && (sr.Status == sandbox.StatusNonzeroExit || sr.Status == sandbox.StatusOK) {
		// The wrapper said why the code failed; missing handlers and
		// values that are not JSON are errors of the request, not of a
		// run.
		switch b.Kind {
		case kindMissingHandler:
			fail(StatusError, ReasonMissingHandler, b.Error)
		case kindNotSerializable:
			fail(StatusError, ReasonNotSerializable, b.Error)
		default:
			fail(StatusFailed, ReasonException, b.Error)
		}
	}
	return res
}

// workspacePrefix starts the names of the workspaces the invoker makes.
const workspacePrefix = "coderunner-exec-"

// workspace makes a fresh host directory for one run: a tmpfs capped at
// the workspace size and inode cap, so that the program cannot fill the
// host's disk through it; release unmounts and removes it. Where no tmpfs
// can be mounted (not root), the run gets the sandbox's private workspace,
// which the backend caps in the sandbox's own namespaces: ws is empty and
// the run lists no artifacts (a warning is logged once).
func (e *Invoker) workspace(log *slog.Logger) (ws string, release func(), err error) {
	d, err := capws.New(e.workDir, workspacePrefix, e.limits.WorkspaceSize, 0)
	if errors.Is(err, capws.ErrUnsupported) {
		e.warnOnce.Do(func() {
			e.log.Warn("runs use the sandbox's private workspace and list no artifacts: a size-capped host workspace needs root",
				"event", "workspace_private", "error", err)
		})
		return "", func() {}, nil
	}
	if err != nil {
		return "", nil, err
	}
	return d.Path, func() {
		if err := d.Remove(); err != nil {
			log.Warn("unable to remove a workspace", "path", d.Path, "error", err)
		}
	}, nil
}

func round(f float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(f*p) / p
}
