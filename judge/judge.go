package judge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/coderunner/coderunner/multifile"
	"github.com/coderunner/coderunner/sandbox"
)

// DefaultMaxOutputKB is limits.max_output_size_kb's default.
const DefaultMaxOutputKB = 64

// Defaults of the bounds on what a request's outputs may cost.
const (
	// DefaultMaxOutputCeilingKB is the highest per-stream output cap that
	// a request's expected outputs can raise Options.MaxOutputKB to: twice
	// MaxTestFieldBytes, so that every valid expected output fits.
	DefaultMaxOutputCeilingKB = 2 * MaxTestFieldBytes >> 10
	// DefaultKeptOutputKB is how much of each test's stdout (actual_output)
	// and stderr (a runtime error's error_message) a result keeps.
	DefaultKeptOutputKB = 64
	// DefaultKeptOutputTotalKB bounds what a result keeps of the programs'
	// output over all its tests.
	DefaultKeptOutputTotalKB = 1024
)

// Options configure a Judge. Zero fields take their defaults.
type Options struct {
	// Parallel is how many tests run at once; default runtime.NumCPU().
	Parallel int
	// MaxOutputKB caps each output stream of a run, in KiB; default
	// DefaultMaxOutputKB. A request raises the cap to twice its largest
	// expected output, up to MaxOutputCeilingKB.
	MaxOutputKB int
	// MaxOutputCeilingKB is the highest cap a request's expected outputs
	// can raise MaxOutputKB to, in KiB; default DefaultMaxOutputCeilingKB,
	// and never below MaxOutputKB. A request with a longer expected output
	// is refused: no answer could fit.
	MaxOutputCeilingKB int
	// KeptOutputKB bounds, in KiB, how much of each test's stdout
	// (actual_output) and stderr (a runtime error's error_message) a
	// result keeps; default DefaultKeptOutputKB. Outputs are judged whole
	// as they stream, whatever is kept.
	KeptOutputKB int
	// KeptOutputTotalKB bounds, in KiB, what a result keeps of the
	// programs' output over all its tests; default
	// DefaultKeptOutputTotalKB. Once it is spent, tests that finish later
	// keep only their verdicts.
	KeptOutputTotalKB int
	// Logger receives warnings (suspicious code, failures of the
	// machinery); default discards them.
	Logger *slog.Logger
	// Now is the clock of total_time_ms; default time.Now. Tests set it
	// to get stable results. The total timeout uses real timers.
	Now func() time.Time
	// Progress, when set, is called as each test finishes, from the
	// goroutine that ran it: with the test's index in the request and its
	// result (already redacted for hidden tests). It must be safe for
	// concurrent use and return quickly.
	Progress func(index int, result TestResult)
	// ToolLimits bound every run of a request's checker or interactor;
	// zero fields take DefaultToolLimits. An interactor's wall time is the
	// solution's time limit plus ToolLimits.WallTime.
	ToolLimits sandbox.Limits
}

// Judge runs a request's code against its test cases through an Engine and
// gives its verdict. It is safe for concurrent use.
type Judge struct {
	engine    Engine
	parallel  int
	maxOutput int64
	ceiling   int64
	keep      int64
	keptTotal int64
	log       *slog.Logger
	now       func() time.Time
	progress  func(int, TestResult)
	toolLim   sandbox.Limits
}

// errTotalTimeout is the cause of the cancellation when total_timeout_ms
// runs out, told apart from a failure or the caller's cancellation.
var errTotalTimeout = errors.New("total timeout exceeded")

// New returns a Judge that prepares and runs programs with engine.
func New(engine Engine, opts Options) *Judge {
	j := &Judge{
		engine:    engine,
		parallel:  opts.Parallel,
		maxOutput: int64(opts.MaxOutputKB) * 1024,
		ceiling:   int64(opts.MaxOutputCeilingKB) * 1024,
		keep:      int64(opts.KeptOutputKB) * 1024,
		keptTotal: int64(opts.KeptOutputTotalKB) * 1024,
		log:       opts.Logger,
		now:       opts.Now,
		progress:  opts.Progress,
		toolLim:   DefaultToolLimits.Overlay(opts.ToolLimits),
	}
	if j.parallel <= 0 {
		j.parallel = runtime.NumCPU()
	}
	if j.maxOutput <= 0 {
		j.maxOutput = DefaultMaxOutputKB * 1024
	}
	if j.ceiling <= 0 {
		j.ceiling = DefaultMaxOutputCeilingKB * 1024
	}
	j.ceiling = min(max(j.ceiling, j.maxOutput), sandbox.MaxOutputBytes)
	if j.keep <= 0 {
		j.keep = DefaultKeptOutputKB * 1024
	}
	if j.keptTotal <= 0 {
		j.keptTotal = DefaultKeptOutputTotalKB * 1024
	}
	if j.log == nil {
		j.log = slog.New(slog.DiscardHandler)
	}
	if j.now == nil {
		j.now = time.Now
	}
	return j
}

// Execute validates req, prepares its code once and runs every test case,
// up to Options.Parallel at a time, within req.TotalTimeoutMS of wall-clock
// time counted from the call (compilation included, though it is never
// cut short: the Engine bounds it with its own limits). It never
// fails and never panics: a refused request, a compilation error and a
// failure of the machinery are all results with their status and
// error_info.
func (j *Judge) Execute(ctx context.Context, req ExecutionRequest) (res ExecutionResult) {
	// The deadline runs on the real clock whatever Options.Now says, so
	// that a fake clock cannot stop the total timeout.
	began := time.Now()
	start := j.now()
	elapsed := func() int64 { return max(0, j.now().Sub(start).Milliseconds()) }
	stage := StageValidation
	defer func() {
		if r := recover(); r != nil {
			j.log.Error("judge panicked", "request_id", req.RequestID, "stage", stage,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res = sandboxErrorResult(req, stage, errors.New("internal error"), elapsed())
		}
	}()

	req = req.WithDefaults()
	if err := req.Validate(); err != nil {
		return InvalidRequestResult(req.RequestID, err, elapsed())
	}
	if err := j.checkOutputs(req); err != nil {
		return InvalidRequestResult(req.RequestID, err, elapsed())
	}
	cmp, err := ParseCompare(req.Compare)
	if err != nil { // Validate checked it; kept so that a change there cannot panic here.
		return InvalidRequestResult(req.RequestID, err, elapsed())
	}
	code, suspicious := SanitizeCode(req.Code, req.Language)
	for _, p := range suspicious {
		j.log.Warn("suspicious code pattern", "request_id", req.RequestID, "language", req.Language, "pattern", p)
	}

	stage = StageCompilation
	prog, failed := j.prepareSolution(ctx, req, code, elapsed)
	if failed != nil {
		return *failed
	}
	defer func() {
		if err := prog.Close(); err != nil {
			j.log.Warn("closing the program failed", "request_id", req.RequestID, "error", err)
		}
	}()

	t, failed := j.prepareTool(ctx, req, elapsed)
	if failed != nil {
		return *failed
	}
	if t != nil {
		defer func() {
			if err := t.prog.Close(); err != nil {
				j.log.Warn("closing the "+t.kind+" failed", "request_id", req.RequestID, "error", err)
			}
		}()
	}

	stage = StageExecution
	deadline := began.Add(time.Duration(req.TotalTimeoutMS) * time.Millisecond)
	results, err := j.runTests(ctx, req, prog, t, cmp, deadline)
	if err != nil {
		j.log.Error("running the tests failed", "request_id", req.RequestID, "language", req.Language, "error", err)
		return sandboxErrorResult(req, stage, err, elapsed())
	}
	res = buildResult(req, results, elapsed())
	score(req, &res, results)
	return res
}

// prepareSolution has the engine prepare the request's code (sanitized as
// code) with its options, or returns the result that says why it could
// not: a refused request, a compilation error, an unknown language or a
// failure of the machinery.
func (j *Judge) prepareSolution(ctx context.Context, req ExecutionRequest, code string, elapsed func() int64) (Program, *ExecutionResult) {
	fail := func(res ExecutionResult) (Program, *ExecutionResult) { return nil, &res }
	opts, err := req.ProgramOptions()
	if err != nil { // Validate checked it; kept so that a change there cannot panic here.
		return fail(InvalidRequestResult(req.RequestID, err, elapsed()))
	}
	prog, err := j.engine.Prepare(ctx, req.Language, code, opts)
	var ce *CompileError
	var ve *ValidationError
	switch {
	case errors.Is(err, multifile.ErrInvalid):
		return fail(InvalidRequestResult(req.RequestID, &ValidationError{Message: err.Error()}, elapsed()))
	case errors.As(err, &ce):
		res := compilationErrorResult(req, ce, elapsed())
		score(req, &res, nil)
		return fail(res)
	case errors.As(err, &ve):
		return fail(InvalidRequestResult(req.RequestID, ve, elapsed()))
	case errors.Is(err, ErrUnsupportedLanguage):
		return fail(unsupportedLanguageResult(req, elapsed()))
	case err != nil:
		j.log.Error("preparing the program failed", "request_id", req.RequestID, "language", req.Language, "error", err)
		return fail(sandboxErrorResult(req, StageCompilation, fmt.Errorf("unable to prepare the program: %w", err), elapsed()))
	case prog == nil:
		j.log.Error("engine returned no program", "request_id", req.RequestID, "language", req.Language)
		return fail(sandboxErrorResult(req, StageCompilation, errors.New("unable to prepare the program"), elapsed()))
	}
	return prog, nil
}

// runTests runs every test of a valid request and returns their verdicts in
// request order, or the first failure of the machinery.
func (j *Judge) runTests(ctx context.Context, req ExecutionRequest, prog Program, t *tool, cmp Comparator, deadline time.Time) ([]TestResult, error) {
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	totalCtx, cancelTotal := context.WithDeadlineCause(runCtx, deadline, errTotalTimeout)
	defer cancelTotal()

	base := sandbox.Limits{
		Memory:      int64(req.MemoryLimitMB) * sandbox.MiB,
		CPUs:        req.CPULimit,
		OutputBytes: j.outputCap(req),
	}
	results := make([]TestResult, len(req.TestCases))
	kept := &budget{left: j.keptTotal}
	var (
		mu       sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancelRun(err)
	}

	skips := newSkipper(req)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(j.parallel, len(req.TestCases)) {
		wg.Go(func() {
			for i := range next {
				var tr TestResult
				if skip, subtask := skips.skip(i, req); skip {
					tr = maybeRedact(req.TestCases[i], skippedResult(req.TestCases[i], subtask), nil)
				} else {
					var err error
					tr, err = j.runOne(totalCtx, req, i, prog, t, cmp, base, kept)
					if err != nil {
						fail(err)
						continue
					}
					skips.done(i, tr)
				}
				results[i] = tr
				if j.progress != nil {
					j.progress(i, tr)
				}
			}
		})
	}
	fed := 0
feed:
	for ; fed < len(req.TestCases); fed++ {
		select {
		case next <- fed:
		case <-totalCtx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()

	if firstErr != nil {
		return nil, firstErr
	}
	if fed < len(req.TestCases) {
		if cause := context.Cause(totalCtx); !errors.Is(cause, errTotalTimeout) {
			return nil, fmt.Errorf("judging stopped: %w", cause)
		}
		for i := fed; i < len(req.TestCases); i++ {
			results[i] = maybeRedact(req.TestCases[i], totalTimeoutResult(req.TestCases[i]), nil)
		}
	}
	return results, nil
}

// runOne runs test i, with the request's checker or interactor t when it
// has one. A panic in the Engine or here is a failure of the machinery,
// reported as an error with the stack in the log.
func (j *Judge) runOne(ctx context.Context, req ExecutionRequest, i int, prog Program, t *tool, cmp Comparator, limits sandbox.Limits, kept *budget) (tr TestResult, err error) {
	tc := req.TestCases[i]
	defer func() {
		if r := recover(); r != nil {
			j.log.Error("test run panicked", "request_id", req.RequestID, "test_id", tc.ID,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("internal error while running test %s", tc.ID)
		}
	}()

	if ctx.Err() != nil {
		return j.stopped(ctx, tc)
	}
	timeout := time.Duration(req.TimeoutMS) * time.Millisecond
	if tc.TimeoutMS != 0 {
		timeout = time.Duration(tc.TimeoutMS) * time.Millisecond
	}
	limits.WallTime, limits.CPUTime = timeout, timeout

	if t != nil && t.interactive {
		tr, res, err := j.interact(ctx, req, tc, prog, t, limits, newToolOutput(0), kept)
		// Either side cut short by the deadline makes the test the
		// deadline's, unless the interaction had been accepted.
		if ctx.Err() != nil && (err != nil || tr.Status != TestPassed) {
			return j.stopped(ctx, tc)
		}
		if err != nil {
			return TestResult{}, fmt.Errorf("test %s: %w", tc.ID, err)
		}
		return maybeRedact(tc, tr, res), nil
	}

	// The output is judged as it streams; the Result keeps only the start
	// of each stream, for the test's result. A checker is given the whole
	// output (up to the cap) once the run is over.
	out := newOutput(cmp, tc)
	if t != nil {
		out = newToolOutput(limits.OutputBytes)
	}
	res, err := RunWithOutput(ctx, prog, []byte(tc.Input), limits, out.runOutput(j.keep))
	// A run that ended on its own keeps its verdict even if the deadline
	// passed meanwhile; any other end after the deadline is the deadline's
	// doing (the backend killed it, or gave up).
	if ctx.Err() != nil && (err != nil || res == nil || res.Status != sandbox.StatusOK) {
		return j.stopped(ctx, tc)
	}
	if err != nil {
		return TestResult{}, fmt.Errorf("test %s: %w", tc.ID, err)
	}
	if res == nil {
		return TestResult{}, fmt.Errorf("test %s: the engine returned no result", tc.ID)
	}
	tr, err = verdict(tc, req.Language, res, out, kept)
	if err != nil {
		return TestResult{}, fmt.Errorf("test %s: %w", tc.ID, err)
	}
	if t != nil && tr.Status == TestPassed {
		// The solution ended cleanly: the checker decides.
		v, err := j.check(ctx, t, tc, out.held.Bytes())
		if ctx.Err() != nil && (err != nil || v.status != TestPassed) {
			return j.stopped(ctx, tc)
		}
		if err != nil {
			return TestResult{}, fmt.Errorf("test %s: %w", tc.ID, err)
		}
		v.apply(&tr)
		chargeMessage(tc, &tr, kept)
	}
	return maybeRedact(tc, tr, res), nil
}

// stopped is the verdict on a test whose run was cut short by the end of
// ctx: a timeout when total_timeout_ms ran out, else the reason judging
// stopped.
func (j *Judge) stopped(ctx context.Context, tc TestCase) (TestResult, error) {
	cause := context.Cause(ctx)
	if errors.Is(cause, errTotalTimeout) {
		return maybeRedact(tc, totalTimeoutResult(tc), nil), nil
	}
	return TestResult{}, fmt.Errorf("judging stopped: %w", cause)
}

// outputCap is the per-stream output limit of every run of req: the
// configured cap, raised to twice the largest expected output so that a
// correct answer always fits, but never above the ceiling: request data
// does not choose what a run may cost.
func (j *Judge) outputCap(req ExecutionRequest) int64 {
	c := j.maxOutput
	for _, tc := range req.TestCases {
		c = max(c, 2*int64(len(tc.ExpectedOutput)))
	}
	return min(c, j.ceiling)
}

// checkOutputs refuses a request with an expected output longer than the
// ceiling of the output cap: no answer to it could fit.
func (j *Judge) checkOutputs(req ExecutionRequest) error {
	for _, tc := range req.TestCases {
		if int64(len(tc.ExpectedOutput)) > j.ceiling {
			return invalidf("Expected output of test %q too large: %d bytes (max %d, the output cap)", tc.ID, len(tc.ExpectedOutput), j.ceiling)
		}
	}
	return nil
}

func maybeRedact(tc TestCase, tr TestResult, res *sandbox.Result) TestResult {
	if !tc.IsHidden {
		return tr
	}
	return redact(tr, res)
}
