package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/assembly"
	"github.com/coderunner/coderunner/internal/strictjson"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
)

const judgeAbout = `Compile the solution in FILE once, run it against every test case in the
--tests file and judge the outputs. The code comes from
FILE, or from standard input with "-" (then --lang is needed). A solution of
several files is a DIR or several FILEs, built from its --entry file (default:
the first FILE, or the directory's main.<ext>). Arguments after -- are the
program's, given to every test's run (coderunner judge --tests t.json main.py -- a b).

The tests file is a JSON array of {id, input, expected_output, is_hidden,
timeout_ms, description} ("expected" is accepted for "expected_output").
The subtasks file (--subtasks) is a JSON array of {id, points, tests,
policy, stop_at_first_failure}: the result then has a score.

--checker FILE judges each test with a program of yours, run as
"checker INPUT OUTPUT ANSWER" (testlib's exit codes: 0 accepted, 1 wrong
answer, 2 presentation error, 7 partial with points from 0 to 1 first on
its stdout; 3 or anything else is judge_error). --interactor FILE makes
the problem interactive: it runs as "interactor INPUT OUTPUT" beside the
solution, each one's stdout piped to the other's stdin, and its exit code
decides the same way.

Without --json it shows progress on a terminal and a table at the end; with
--json it prints the ExecutionResult. Exit status: 0 when every test passed,
1 otherwise, 2 for bad usage or a refused request.

With --batch FILE.jsonl (no FILE) it judges one request per line instead
(request_id, problem_id, language, code, test_cases or test_set, and every
other field of a judge request) and writes one result per line, in input
order, to stdout or --out; the summary goes to stderr and, as JSON, to
--summary. An interrupted batch resumes where it stopped when run again
with the same --out. Exit status: 0 when every line was judged, 1 when
writing failed, 2 for bad usage, 130 when interrupted.`

// maxTestsFile bounds the tests file read from disk.
const maxTestsFile = 64 << 20

type judgeFlags struct {
	lang      string
	tests     string
	subtasks  string
	timeoutMS int
	totalMS   int
	memory    int
	cpus      float64
	compare   string
	parallel  int
	program   programFlags
	tools     toolFlags
	args      []string
	entry     string
	batch     batchFlags
}

func (a *App) judgeCmd(ctx context.Context, args []string) int {
	fs, c := a.flagSet("judge", "--tests TESTS FILE|DIR|-|FILE... [-- ARGS...]  or  --batch FILE.jsonl [--out FILE]", judgeAbout, true)
	var f judgeFlags
	fs.StringVar(&f.lang, "lang", "", "language `ID` or alias (default: from the file extension; required with -)")
	fs.StringVar(&f.tests, "tests", "", "JSON `FILE` with the array of test cases (required)")
	fs.StringVar(&f.subtasks, "subtasks", "", "JSON `FILE` with the array of subtasks {id, points, tests, policy, stop_at_first_failure}; the result then has a score")
	fs.IntVar(&f.timeoutMS, "timeout-ms", judge.DefaultTimeoutMS, "wall-time limit of each test in `MS`, 100 to 60000; a test's own timeout_ms replaces it")
	fs.IntVar(&f.totalMS, "total-timeout-ms", judge.DefaultTotalTimeoutMS, "wall-time limit of the whole judge in `MS`, from its start; tests not finished by then are timeout")
	fs.IntVar(&f.memory, "memory", judge.DefaultMemoryLimitMB, "memory limit of each test in `MB`, 16 to 1024")
	fs.Float64Var(&f.cpus, "cpus", judge.DefaultCPULimit, "CPU bandwidth of each test in `CORES`")
	fs.StringVar(&f.compare, "compare", judge.CompareNormalized, "output comparison `MODE`: normalized, exact, tokens or float:EPS")
	fs.IntVar(&f.parallel, "parallel", runtime.NumCPU(), "tests run at once, `N` from 1 to 64")
	fs.StringVar(&f.entry, "entry", "", "with a DIR or several FILEs, the `PATH` (relative to the directory) of the file to compile or run")
	f.program.add(fs)
	f.tools.add(fs)
	f.batch.add(fs)

	pos, rest, code, done := a.parseDash(fs, c, args)
	if done {
		return code
	}
	if f.batch.input != "" {
		return a.judgeBatch(ctx, fs, c, &f, pos, rest)
	}
	if f.batch.set(fs) {
		return a.fail("judge", "--out, --summary, --test-sets and --workers go with --batch")
	}
	files, progArgs, err := filesAndArgs(pos, rest)
	if err != nil {
		return a.fail("judge", "%v", err)
	}
	f.args = progArgs
	switch {
	case f.tests == "":
		return a.fail("judge", "--tests: the tests file is required")
	case f.parallel < 1 || f.parallel > 64:
		return a.fail("judge", "--parallel: %d is out of range 1..64", f.parallel)
	}
	cfg, log, err := a.setup(fs, c)
	if err != nil {
		return a.fail("judge", "%v", err)
	}
	langs, err := cfg.LanguageTable()
	if err != nil {
		return a.fail("judge", "--config: %v", err)
	}

	req, code, ok := a.judgeRequest(c, &f, files, langs)
	if !ok {
		return code
	}
	res, code, ok := a.judgeRun(ctx, c, &f, req, assembly.Options{
		Config: cfg, Logger: log, Registry: a.Registry, Backend: c.backend, Languages: langs,
		Warm: min(f.parallel, len(req.TestCases)), Engine: true,
	})
	if !ok {
		return code
	}
	if ctx.Err() != nil {
		fmt.Fprintln(a.Stderr, "coderunner judge: interrupted")
		return ExitInterrupted
	}
	if c.json {
		if err := writeJSON(a.Stdout, res); err != nil {
			fmt.Fprintf(a.Stderr, "coderunner judge: %v\n", err)
			return ExitFailure
		}
	} else {
		a.judgeTable(res)
	}
	switch res.Status {
	case judge.StatusAllPassed:
		return ExitOK
	case judge.StatusSandboxError:
		if res.ErrorInfo != nil && res.ErrorInfo.Code == judge.CodeValidationError {
			return ExitUsage
		}
	}
	return ExitFailure
}

// judgeRequest reads the code and the tests file that judge's flags name
// and makes the request; ok is false, with the exit code, when they are
// refused.
func (a *App) judgeRequest(c *common, f *judgeFlags, pos []string, langs *lang.Table) (req judge.ExecutionRequest, code int, ok bool) {
	var err error
	var src []byte
	var language string
	var l *lang.Language
	file := pos[0]
	var prog *program
	switch {
	case len(pos) > 1 || isDir(file):
		if prog, err = readProgram(pos, f.entry, langs); err != nil {
			return req, a.fail("judge", "%v", err), false
		}
		file = prog.entry
	case f.entry != "":
		return req, a.fail("judge", "--entry: only with a DIR or several FILEs"), false
	case file == "-":
		if f.lang == "" {
			return req, a.fail("judge", "--lang: needed when the code comes from stdin"), false
		}
		src, err = readBounded(a.Stdin, judge.MaxCodeBytes, "stdin")
	default:
		src, err = readFileBounded(file, judge.MaxCodeBytes)
	}
	if err != nil {
		return req, a.fail("judge", "%v", err), false
	}
	switch {
	case f.lang != "":
		l, err = langs.Lookup(f.lang)
		if err != nil {
			return req, a.fail("judge", "--lang: %v", err), false
		}
		language = l.ID
	default:
		l, err = langs.ForFile(file)
		if err != nil {
			return req, a.fail("judge", "--lang: %v", err), false
		}
		language = l.ID
	}
	if err := checkProgramFlags(l, f.args, f.program.compilerFlags, f.program.envMap()); err != nil {
		return req, a.fail("judge", "%v", err), false
	}

	raw, err := readFileBounded(f.tests, maxTestsFile)
	if err != nil {
		return req, a.fail("judge", "--tests: %v", err), false
	}
	tests, err := decodeTests(raw)
	if err != nil {
		return req, a.fail("judge", "--tests: %s is not a JSON array of test cases: %v", f.tests, err), false
	}

	var subtasks []judge.Subtask
	if f.subtasks != "" {
		raw, err := readFileBounded(f.subtasks, maxTestsFile)
		if err != nil {
			return req, a.fail("judge", "--subtasks: %v", err), false
		}
		if err := strictjson.Unmarshal(raw, &subtasks); err != nil {
			return req, a.fail("judge", "--subtasks: %s is not a JSON array of subtasks: %v", f.subtasks, strictjson.Explain(err, raw, &subtasks)), false
		}
	}

	checker, interactor, err := f.tools.tools(langs)
	if err != nil {
		return req, a.fail("judge", "%v", err), false
	}

	req = judge.ExecutionRequest{
		Checker:        checker,
		Interactor:     interactor,
		RequestID:      fmt.Sprintf("cli-%d", time.Now().UnixNano()),
		Code:           string(src),
		Language:       language,
		TestCases:      tests,
		TimeoutMS:      f.timeoutMS,
		TotalTimeoutMS: f.totalMS,
		MemoryLimitMB:  f.memory,
		CPULimit:       f.cpus,
		Compare:        f.compare,
		Subtasks:       subtasks,

		Args:          f.args,
		CompilerFlags: f.program.compilerFlags,
		Env:           f.program.envMap(),
	}
	if prog != nil {
		req.Files, req.Entry = prog.files, prog.entry
	}
	if err := req.WithDefaults().Validate(); err != nil {
		res := judge.InvalidRequestResult(req.RequestID, err, 0)
		if c.json {
			_ = writeJSON(a.Stdout, res)
		} else {
			fmt.Fprintf(a.Stderr, "coderunner judge: %s\n", res.ErrorInfo.Message)
		}
		return req, ExitUsage, false
	}

	return req, 0, true
}

// judgeRun judges req on the parts opts opens, with progress on a
// terminal; ok is false, with the exit code, when there is no sandbox.
func (a *App) judgeRun(ctx context.Context, c *common, f *judgeFlags, req judge.ExecutionRequest, opts assembly.Options) (res judge.ExecutionResult, code int, ok bool) {
	parts, err := assembly.Open(ctx, opts)
	if err != nil {
		var pe *assembly.Error
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return res, a.judgeSandboxError(c, req, err), false
	}
	defer parts.Close()
	if parts.EngineErr != nil {
		return res, a.judgeSandboxError(c, req, parts.EngineErr), false
	}
	var prog *progress
	if !c.json && isTerminal(a.Stderr) {
		prog = &progress{w: a.Stderr, total: len(req.TestCases)}
		fmt.Fprintf(a.Stderr, "compiling and judging %d tests...", len(req.TestCases))
	}
	jopts := parts.JudgeOptions()
	jopts.Parallel = f.parallel
	if prog != nil {
		jopts.Progress = prog.done
	}
	res = parts.Judge(jopts).Execute(ctx, req)
	if prog != nil {
		prog.finish()
	}
	return res, 0, true
}

// judgeSandboxError reports a sandbox that could not be set up.
func (a *App) judgeSandboxError(c *common, req judge.ExecutionRequest, err error) int {
	if c.json {
		msg := err.Error()
		_ = writeJSON(a.Stdout, judge.ExecutionResult{
			RequestID:   req.RequestID,
			Status:      judge.StatusSandboxError,
			TestResults: []judge.TestResult{},
			Summary:     "sandbox unavailable",
			ErrorInfo:   &judge.ExecutionError{Code: judge.CodeSandboxError, Message: msg, Stage: judge.StageExecution, Details: &msg},
		})
	} else {
		fmt.Fprintf(a.Stderr, "coderunner judge: sandbox unavailable: %v\n", err)
	}
	return ExitFailure
}

// judgeTable prints the result for a person. On a terminal, the
// compiler's output and the programs' messages in it have their control
// characters shown as escapes (termSafe), as run shows its output.
func (a *App) judgeTable(res judge.ExecutionResult) {
	if isTerminal(a.Stdout) {
		t := &termSafe{w: a.Stdout}
		stdout := a.Stdout
		a.Stdout = t
		defer func() {
			_ = t.Flush()
			a.Stdout = stdout
		}()
	}
	if res.CompilationOutput != nil && res.Status == judge.StatusCompilationError {
		fmt.Fprintf(a.Stdout, "compilation failed:\n%s\n", strings.TrimRight(*res.CompilationOutput, "\n"))
	}
	if len(res.TestResults) > 0 {
		tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TEST\tSTATUS\tTIME\tMEMORY\tMESSAGE")
		for _, r := range res.TestResults {
			msg := ""
			switch {
			case r.ErrorMessage != nil:
				msg = firstLine(*r.ErrorMessage, 60)
			case r.CheckerMessage != nil:
				msg = firstLine(*r.CheckerMessage, 60)
			}
			if r.Points != nil {
				msg = strings.TrimSpace(fmt.Sprintf("%g points %s", *r.Points, msg))
			}
			fmt.Fprintf(tw, "%s\t%s\t%d ms\t%d KB\t%s\n", r.TestID, r.Status, r.ExecutionTimeMS, r.MemoryUsedKB, msg)
		}
		_ = tw.Flush()
	}
	if len(res.SubtaskResults) > 0 {
		tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SUBTASK\tSCORE\tPASSED")
		for _, st := range res.SubtaskResults {
			fmt.Fprintf(tw, "%s\t%g/%g\t%d/%d\n", st.ID, st.Score, st.MaxScore, st.Passed, st.Total)
		}
		_ = tw.Flush()
	}
	if res.ErrorInfo != nil && (res.Status == judge.StatusSandboxError || res.Status == judge.StatusJudgeError) {
		fmt.Fprintf(a.Stdout, "error: %s\n", res.ErrorInfo.Message)
	}
	score := ""
	if res.Score != nil && res.MaxScore != nil {
		score = fmt.Sprintf(", score %g/%g", *res.Score, *res.MaxScore)
	}
	fmt.Fprintf(a.Stdout, "%s: %s%s (%d ms)\n", res.Status, res.Summary, score, res.TotalTimeMS)
}

func firstLine(s string, max int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// progress draws one line on a terminal as tests finish.
type progress struct {
	w      io.Writer
	total  int
	mu     sync.Mutex
	n      int
	failed int
}

func (p *progress) done(_ int, r judge.TestResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if r.Status != judge.TestPassed {
		p.failed++
	}
	fmt.Fprintf(p.w, "\r\x1b[K[%d/%d] %d failed; last: %s %s", p.n, p.total, p.failed, r.TestID, r.Status)
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\x1b[K")
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// decodeTests reads a tests file: a JSON array of test cases, refusing
// a field a test case does not have ("[2].expected_answer: unknown field")
// or a value of the wrong type ("[2].input: must be a string, not a JSON
// number").
func decodeTests(raw []byte) ([]judge.TestCase, error) {
	var tests []judge.TestCase
	if err := json.Unmarshal(raw, &tests); err != nil {
		return nil, strictjson.Explain(err, raw, &tests)
	}
	return tests, nil
}
