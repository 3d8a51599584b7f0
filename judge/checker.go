package judge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// Tool is a program of the problem rather than of the solution: a checker
// or an interactor. It is compiled once per request (and cached like a
// solution) and runs in sandboxes of its own, never the solution's.
type Tool struct {
	// Language is a language id or alias of the language table.
	Language string `json:"language"`
	// Code is the program's source.
	Code string `json:"code"`
}

// Exit codes of a checker or an interactor, testlib's.
const (
	ExitAccepted      = 0
	ExitWrongAnswer   = 1
	ExitPresentation  = 2
	ExitCheckerFailed = 3
	ExitPartial       = 7
)

// Names of the files a checker or an interactor finds in its workspace,
// and the path an interactor writes its OUTPUT to.
const (
	ToolInputFile  = "input.txt"
	ToolOutputFile = "output.txt"
	ToolAnswerFile = "answer.txt"
)

// MaxCheckerMessageBytes bounds a test's checker_message: what a checker
// or an interactor wrote on stdout and stderr.
const MaxCheckerMessageBytes = 16 << 10

// DefaultToolLimits bound every run of a checker or an interactor, apart
// from the solution's: 10 s of CPU and of wall time, 512 MB, one core,
// 64 KiB of output per stream. An interactor's wall time is the solution's
// time limit plus this, so that when both wait for each other the
// solution's limit ends the test first.
var DefaultToolLimits = sandbox.Limits{
	WallTime:    10 * time.Second,
	CPUTime:     10 * time.Second,
	Memory:      512 * sandbox.MiB,
	CPUs:        1,
	OutputBytes: 64 << 10,
}

// Invocation is a run of a program with more than a standard input:
// arguments after its own, files in its workspace and streams.
type Invocation struct {
	// Args are appended to the program's argv.
	Args []string
	// Files are written in the run's workspace before it starts.
	Files []sandbox.File
	// Stdin feeds the program's standard input; nil is /dev/null.
	Stdin io.Reader
	// Stdout and Stderr receive each stream as it is produced, up to
	// Limits.OutputBytes.
	Stdout, Stderr io.Writer
	// Keep bounds how much of each stream the Result keeps; zero keeps
	// everything up to Limits.OutputBytes.
	Keep int64
	// Collect, when set, names a file of the workspace the program may
	// write (an interactor's OUTPUT): once the program ends, the first
	// MaxCheckerMessageBytes bytes of it follow its stderr.
	Collect string
	// Limits bound the run.
	Limits sandbox.Limits
}

// Invoker is a Program that can run as an Invocation. Checkers,
// interactors and the solutions of interactive problems need it; an
// Engine whose programs lack it cannot judge with them.
type Invoker interface {
	Program
	Invoke(ctx context.Context, inv Invocation) (*sandbox.Result, error)
}

// validateTools checks the checker and the interactor of a request.
func (r ExecutionRequest) validateTools() error {
	if r.Checker != nil && r.Interactor != nil {
		return invalidf("A request takes a checker or an interactor, not both (an interactor gives the verdict itself)")
	}
	for _, t := range []struct {
		name string
		tool *Tool
	}{{"checker", r.Checker}, {"interactor", r.Interactor}} {
		switch {
		case t.tool == nil:
		case strings.TrimSpace(t.tool.Language) == "":
			return invalidf("Missing %s language", t.name)
		case strings.TrimSpace(t.tool.Code) == "":
			return invalidf("Empty %s code", t.name)
		case len(t.tool.Code) > MaxCodeBytes:
			return invalidf("%s code too large: %d bytes (max %d)", capitalize(t.name), len(t.tool.Code), MaxCodeBytes)
		}
	}
	return nil
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

type toolKey struct{}

// PreparingTool reports whether ctx is that of an Engine.Prepare of a
// request's checker or interactor rather than of its solution: an Engine
// that wraps the solution's program (to count its tests) leaves these
// alone.
func PreparingTool(ctx context.Context) bool {
	v, _ := ctx.Value(toolKey{}).(bool)
	return v
}

// tool is a request's prepared checker or interactor.
type tool struct {
	kind string // "checker" or "interactor"
	prog Invoker
	// interactive says the tool is an interactor.
	interactive bool
}

// prepareTool compiles the request's checker or interactor. A result
// other than nil ends the request: the tool did not compile, or the
// engine cannot run it (a judge_error or a sandbox_error).
func (j *Judge) prepareTool(ctx context.Context, req ExecutionRequest, elapsed func() int64) (*tool, *ExecutionResult) {
	t := &tool{kind: "checker"}
	spec := req.Checker
	if req.Interactor != nil {
		t.kind, t.interactive, spec = "interactor", true, req.Interactor
	}
	if spec == nil {
		return nil, nil
	}
	prog, err := j.engine.Prepare(context.WithValue(ctx, toolKey{}, true), spec.Language, spec.Code, ProgramOptions{})
	var ce *CompileError
	var ve *ValidationError
	switch {
	case errors.As(err, &ce):
		msg := ce.Output
		if msg == "" {
			msg = "Compilation failed"
		}
		res := judgeErrorResult(req, StageCompilation, fmt.Sprintf("The %s did not compile: %s", t.kind, msg), elapsed())
		return nil, &res
	case errors.As(err, &ve):
		res := InvalidRequestResult(req.RequestID, invalidf("Invalid %s: %s", t.kind, ve.Message), elapsed())
		return nil, &res
	case errors.Is(err, ErrUnsupportedLanguage):
		res := InvalidRequestResult(req.RequestID, invalidf("Unsupported %s language: %s", t.kind, spec.Language), elapsed())
		return nil, &res
	case err != nil:
		j.log.Error("preparing the "+t.kind+" failed", "request_id", req.RequestID, "language", spec.Language, "error", err)
		res := sandboxErrorResult(req, StageCompilation, fmt.Errorf("unable to prepare the %s: %w", t.kind, err), elapsed())
		return nil, &res
	case prog == nil:
		res := sandboxErrorResult(req, StageCompilation, fmt.Errorf("unable to prepare the %s", t.kind), elapsed())
		return nil, &res
	}
	inv, ok := prog.(Invoker)
	if !ok {
		_ = prog.Close()
		res := sandboxErrorResult(req, StageCompilation, fmt.Errorf("this engine cannot run a %s", t.kind), elapsed())
		return nil, &res
	}
	t.prog = inv
	return t, nil
}

// judgeErrorResult ends a request whose checker or interactor failed
// before any test ran: nothing is known of the solution.
func judgeErrorResult(req ExecutionRequest, stage, msg string, totalMS int64) ExecutionResult {
	return ExecutionResult{
		RequestID:   req.RequestID,
		Status:      StatusJudgeError,
		TestResults: []TestResult{},
		TotalTimeMS: totalMS,
		Summary:     "Judge error: " + msg,
		ErrorInfo: &ExecutionError{
			Code:    CodeJudgeError,
			Message: msg,
			Stage:   stage,
		},
	}
}

// toolLimits are the limits of a run of the request's checker or
// interactor.
func (j *Judge) toolLimits() sandbox.Limits {
	return j.toolLim
}

// toolVerdict is what a checker's or an interactor's run says of a test.
type toolVerdict struct {
	status  TestStatus
	points  *float64
	message string
	// failure explains a judge_error.
	failure string
}

// readToolVerdict turns the run of a checker or an interactor into its
// verdict: testlib's exit codes, points on stdout (on stderr with
// pointsInStderr: an interactor's stdout goes to the solution) for a
// partial score. A run that crashed, ran out of a limit or exited with
// another code is a judge_error.
func readToolVerdict(kind string, res *sandbox.Result, stdout, stderr string, pointsInStderr bool) toolVerdict {
	msg := toolMessage(stdout, stderr)
	fail := func(why string) toolVerdict {
		return toolVerdict{status: TestJudgeError, message: msg, failure: fmt.Sprintf("The %s %s", kind, why)}
	}
	switch res.Status {
	case sandbox.StatusOK:
		return toolVerdict{status: TestPassed, message: msg}
	case sandbox.StatusTimeLimit:
		return fail("timed out")
	case sandbox.StatusMemoryLimit:
		return fail("ran out of memory")
	case sandbox.StatusOutputLimit:
		return fail("wrote more than its output limit")
	case sandbox.StatusSignaled:
		return fail(fmt.Sprintf("was killed by signal %d", int(res.Signal)))
	case sandbox.StatusNonzeroExit:
	default:
		return fail(fmt.Sprintf("ended with status %q", res.Status))
	}
	switch res.ExitCode {
	case ExitWrongAnswer:
		return toolVerdict{status: TestWrongAnswer, message: msg}
	case ExitPresentation:
		return toolVerdict{status: TestPresentationError, message: msg}
	case ExitCheckerFailed:
		return fail("reported a failure (exit code 3)")
	case ExitPartial:
		from, other, where := stdout, stderr, "standard output"
		if pointsInStderr {
			from, other, where = stderr, stdout, "OUTPUT"
		}
		p, rest, ok := parsePoints(from)
		if !ok {
			return fail("exited with code 7 without points between 0 and 1 at the start of its " + where)
		}
		return toolVerdict{status: TestPartial, points: &p, message: toolMessage(rest, other)}
	default:
		return fail(fmt.Sprintf("exited with code %d (want 0, 1, 2, 3 or 7)", res.ExitCode))
	}
}

// parsePoints reads the points of a partial verdict: the first word of
// stdout (after an optional word "points"), a number from 0 to 1. It
// returns what follows as the rest of the message.
func parsePoints(stdout string) (float64, string, bool) {
	fields := strings.Fields(stdout)
	if len(fields) > 0 && strings.EqualFold(fields[0], "points") {
		stdout = strings.TrimSpace(stdout)[len(fields[0]):]
		fields = fields[1:]
	}
	if len(fields) == 0 {
		return 0, "", false
	}
	p, err := strconv.ParseFloat(fields[0], 64)
	if err != nil || math.IsNaN(p) || p < 0 || p > 1 {
		return 0, "", false
	}
	rest := strings.TrimSpace(stdout)
	return p, strings.TrimSpace(rest[len(fields[0]):]), true
}

// toolMessage joins what a checker wrote on stdout and stderr, bounded.
func toolMessage(stdout, stderr string) string {
	var parts []string
	for _, s := range []string{stdout, stderr} {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	m, cut := prefix(strings.Join(parts, "\n"), MaxCheckerMessageBytes)
	if cut {
		m += "…"
	}
	return m
}

// apply puts a tool's verdict on a test whose solution ran cleanly.
func (v toolVerdict) apply(tr *TestResult) {
	tr.Status = v.status
	tr.Points = v.points
	tr.ErrorMessage = nil
	if v.message != "" {
		tr.CheckerMessage = strp(v.message)
	}
	if v.status == TestJudgeError {
		tr.ErrorMessage = strp(v.failure)
	}
}

// chargeMessage charges a test's checker_message to what the result may
// still keep of outputs (Options.KeptOutputTotalKB), as actual_output is:
// a request of many tests cannot make its result grow past it. A hidden
// test's message is removed later and charges nothing.
func chargeMessage(tc TestCase, tr *TestResult, kept *budget) {
	if tr.CheckerMessage == nil || tc.IsHidden {
		return
	}
	m, cut := kept.take(*tr.CheckerMessage)
	switch {
	case m == "":
		tr.CheckerMessage = nil
	case cut:
		tr.CheckerMessage = strp(m + "…")
	default:
		tr.CheckerMessage = strp(m)
	}
}

// check runs the checker on a test whose solution ended cleanly with
// output (its whole stdout, up to the output cap).
func (j *Judge) check(ctx context.Context, t *tool, tc TestCase, output []byte) (toolVerdict, error) {
	var stdout, stderr boundedBuffer
	stdout.limit, stderr.limit = MaxCheckerMessageBytes, MaxCheckerMessageBytes
	res, err := t.prog.Invoke(ctx, Invocation{
		Args: []string{ToolInputFile, ToolOutputFile, ToolAnswerFile},
		Files: []sandbox.File{
			{Path: ToolInputFile, Content: []byte(tc.Input), Mode: 0o444},
			{Path: ToolOutputFile, Content: output, Mode: 0o444},
			{Path: ToolAnswerFile, Content: []byte(tc.ExpectedOutput), Mode: 0o444},
		},
		Stdout: &stdout,
		Stderr: &stderr,
		Keep:   MaxCheckerMessageBytes,
		Limits: j.toolLimits(),
	})
	if err != nil {
		return toolVerdict{}, fmt.Errorf("checker: %w", err)
	}
	if res == nil {
		return toolVerdict{}, errors.New("checker: the engine returned no result")
	}
	return readToolVerdict("checker", res, stdout.String(), stderr.String(), false), nil
}

// boundedBuffer keeps the first limit bytes written to it and takes (and
// drops) the rest. It is safe for concurrent use.
type boundedBuffer struct {
	mu    sync.Mutex
	limit int64
	buf   []byte
	n     int64
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += int64(len(p))
	if room := b.limit - int64(len(b.buf)); room > 0 {
		b.buf = append(b.buf, p[:min(int64(len(p)), room)]...)
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

func (b *boundedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf...)
}

// acceptAll is the Matcher of a test a checker or an interactor judges:
// the comparison is theirs.
type acceptAll struct{}

func (acceptAll) Write(p []byte) (int, error) { return len(p), nil }
func (acceptAll) Match() bool                 { return true }
