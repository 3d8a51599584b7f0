package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/coderunner/coderunner/internal/assembly"
	"github.com/coderunner/coderunner/internal/strictjson"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/judge/batch"
)

// batchFlags are judge's flags of a batch.
type batchFlags struct {
	input    string
	out      string
	summary  string
	testSets string
	workers  int
}

func (b *batchFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&b.input, "batch", "", "judge the JSON Lines `FILE` (- for stdin): one judge request per line, one result per line")
	fs.StringVar(&b.out, "out", "", "with --batch: write the results to `FILE` (default stdout); a run that finds results there resumes after them")
	fs.StringVar(&b.summary, "summary", "", "with --batch: write the summary as JSON to `FILE`")
	fs.StringVar(&b.testSets, "test-sets", "", "with --batch: `DIR` of shared test sets; a line's \"test_set\": \"NAME\" takes DIR/NAME.json")
	fs.IntVar(&b.workers, "workers", runtime.NumCPU(), "with --batch: requests judged at once, `N` from 1 to 256")
}

// set reports whether a flag of a batch was given.
func (b *batchFlags) set(fs *flag.FlagSet) bool {
	given := false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "out", "summary", "test-sets", "workers":
			given = true
		}
	})
	return given
}

// judgeBatch is judge --batch.
func (a *App) judgeBatch(ctx context.Context, fs *flag.FlagSet, c *common, f *judgeFlags, pos, rest []string) int {
	if code, ok := a.checkBatchFlags(fs, f, pos, rest); !ok {
		return code
	}
	bio, code, ok := a.openBatch(f)
	if !ok {
		return code
	}
	defer bio.close()

	cfg, log, err := a.setup(fs, c)
	if err != nil {
		return a.fail("judge", "%v", err)
	}
	langs, err := cfg.LanguageTable()
	if err != nil {
		return a.fail("judge", "--config: %v", err)
	}
	parts, err := assembly.Open(ctx, assembly.Options{
		Config: cfg, Logger: log, Registry: a.Registry, Backend: c.backend, Languages: langs,
		Warm: f.batch.workers * f.parallel, Engine: true,
	})
	if err != nil {
		var pe *assembly.Error
		if errors.As(err, &pe) {
			err = pe.Err
		}
		fmt.Fprintf(a.Stderr, "coderunner judge: sandbox unavailable: %v\n", err)
		return ExitFailure
	}
	defer parts.Close()
	jopts := parts.JudgeOptions()
	jopts.Parallel = f.parallel

	opts := batch.Options{Judge: batchDefaults(parts.Judge(jopts), f, bio.defaultTests), Workers: f.batch.workers,
		TestSets: bio.sets, Summary: bio.sum}
	if n := len(bio.resumed); n > 0 {
		opts.Skip = bio.resumed[n-1].line
		opts.Check = checkResumed(bio.resumed, f.batch.out)
	}
	var bar *batchProgress
	if isTerminal(a.Stderr) {
		bar = &batchProgress{w: a.Stderr, total: bio.total - len(bio.resumed)}
		opts.Progress = bar.update
	}
	_, runErr := batch.Run(ctx, bio.in, bio.out, opts)
	if bar != nil {
		bar.finish()
	}
	return a.finishBatch(ctx, f, bio.sum, runErr)
}

// checkBatchFlags refuses the flags and arguments a batch does not take,
// and makes --parallel 1 unless it was given: the workers keep the cores
// busy, each request's tests run one at a time.
func (a *App) checkBatchFlags(fs *flag.FlagSet, f *judgeFlags, pos, rest []string) (int, bool) {
	explicit := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { explicit[fl.Name] = true })
	switch {
	case len(pos) > 0 || len(rest) > 0:
		return a.fail("judge", "--batch takes no FILE or program arguments: each line carries its own"), false
	case explicit["subtasks"] || explicit["lang"] || explicit["entry"] || len(f.program.compilerFlags) > 0 || len(f.program.env) > 0:
		return a.fail("judge", "--subtasks, --lang, --entry, --compiler-flag and --env go in each line of a --batch"), false
	case f.batch.workers < 1 || f.batch.workers > 256:
		return a.fail("judge", "--workers: %d is out of range 1..256", f.batch.workers), false
	case f.parallel < 1 || f.parallel > 64:
		return a.fail("judge", "--parallel: %d is out of range 1..64", f.parallel), false
	}
	if !explicit["parallel"] {
		f.parallel = 1
	}
	return 0, true
}

// batchIO is what a batch reads and writes.
type batchIO struct {
	in           io.Reader
	total        int // non-blank input lines; -1 when unknown (stdin)
	out          io.Writer
	resumed      []resumedLine
	sum          *batch.Summary
	defaultTests []judge.TestCase
	sets         func(string) ([]judge.TestCase, error)
	closers      []io.Closer
}

func (b *batchIO) close() {
	for _, c := range b.closers {
		_ = c.Close()
	}
}

// openBatch opens the input, the results file (reading what an earlier
// run left there), --tests and --test-sets.
func (a *App) openBatch(f *judgeFlags) (_ *batchIO, code int, ok bool) {
	b := &batchIO{in: a.Stdin, total: -1, out: a.Stdout, sum: batch.NewSummary()}
	fail := func(format string, args ...any) (*batchIO, int, bool) {
		b.close()
		return nil, a.fail("judge", format, args...), false
	}
	if f.tests != "" {
		raw, err := readFileBounded(f.tests, maxTestsFile)
		if err != nil {
			return fail("--tests: %v", err)
		}
		if b.defaultTests, err = decodeTests(raw); err != nil {
			return fail("--tests: %s is not a JSON array of test cases: %v", f.tests, err)
		}
	}
	if dir := f.batch.testSets; dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return fail("--test-sets: %s is not a directory", dir)
		}
		b.sets = func(name string) ([]judge.TestCase, error) {
			raw, err := readFileBounded(filepath.Join(dir, name+".json"), maxTestsFile)
			if err != nil {
				return nil, err
			}
			return decodeTests(raw)
		}
	}
	if f.batch.input != "-" {
		file, err := os.Open(f.batch.input)
		if err != nil {
			return fail("--batch: %v", err)
		}
		b.closers = append(b.closers, file)
		if b.total, err = countLines(file); err != nil {
			return fail("--batch: %v", err)
		}
		b.in = file
	}
	if f.batch.out != "" {
		file, lines, err := openResumable(f.batch.out, b.sum)
		if err != nil {
			return fail("--out: %v", err)
		}
		b.closers = append(b.closers, file)
		b.out, b.resumed = file, lines
		if n := len(lines); n > 0 {
			fmt.Fprintf(a.Stderr, "coderunner judge: resuming after line %d (%d results in %s)\n", lines[n-1].line, n, f.batch.out)
		}
	}
	return b, 0, true
}

// batchDefaults judges a line with j, giving it the flags' limits and
// --tests where it has none of its own.
func batchDefaults(j *judge.Judge, f *judgeFlags, tests []judge.TestCase) func(context.Context, judge.ExecutionRequest) judge.ExecutionResult {
	return func(ctx context.Context, req judge.ExecutionRequest) judge.ExecutionResult {
		if len(req.TestCases) == 0 && tests != nil {
			req.TestCases = tests
		}
		if req.TimeoutMS == 0 {
			req.TimeoutMS = f.timeoutMS
		}
		if req.TotalTimeoutMS == 0 {
			req.TotalTimeoutMS = f.totalMS
		}
		if req.MemoryLimitMB == 0 {
			req.MemoryLimitMB = f.memory
		}
		if req.CPULimit == 0 {
			req.CPULimit = f.cpus
		}
		if req.Compare == "" {
			req.Compare = f.compare
		}
		return j.Execute(ctx, req)
	}
}

// finishBatch prints the summary, writes --summary and gives the exit
// status.
func (a *App) finishBatch(ctx context.Context, f *judgeFlags, sum *batch.Summary, runErr error) int {
	sum.WriteText(a.Stderr)
	if f.batch.summary != "" {
		b, err := json.MarshalIndent(sum, "", "  ")
		if err == nil {
			err = os.WriteFile(f.batch.summary, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(a.Stderr, "coderunner judge: --summary: %v\n", err)
			return ExitFailure
		}
	}
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(a.Stderr, "coderunner judge: interrupted; run the same command again to resume")
		return ExitInterrupted
	case runErr != nil:
		fmt.Fprintf(a.Stderr, "coderunner judge: %v\n", runErr)
		var mismatch *resumeMismatch
		if errors.As(runErr, &mismatch) {
			return ExitUsage
		}
		return ExitFailure
	}
	return ExitOK
}

// countLines counts the lines of f that are not blank, then rewinds it.
func countLines(f *os.File) (int, error) {
	br := bufio.NewReaderSize(f, 256<<10)
	n, blank := 0, true
	for {
		b, err := br.ReadByte()
		if err != nil {
			if !blank {
				n++
			}
			if errors.Is(err, io.EOF) {
				_, err = f.Seek(0, io.SeekStart)
				return n, err
			}
			return 0, err
		}
		switch b {
		case '\n':
			if !blank {
				n++
			}
			blank = true
		case ' ', '\t', '\r':
		default:
			blank = false
		}
	}
}

// resumedLine is a result an earlier run wrote.
type resumedLine struct {
	line      int
	requestID string
}

// openResumable opens the results file for appending. The whole results
// an earlier run left there are counted into sum and returned; a last
// line cut short is removed.
func openResumable(path string, sum *batch.Summary) (*os.File, []resumedLine, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*os.File, []resumedLine, error) {
		_ = f.Close()
		return nil, nil, err
	}
	var lines []resumedLine
	br := bufio.NewReaderSize(f, 256<<10)
	var good int64
	for {
		raw, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			break // a line without its newline was cut short
		}
		if err != nil {
			return fail(err)
		}
		var r batch.Result
		if err := strictjson.Unmarshal(bytes.TrimSpace(raw), &r); err != nil || r.Line <= 0 ||
			(len(lines) > 0 && r.Line <= lines[len(lines)-1].line) {
			return fail(fmt.Errorf("%s: line %d is not a result of coderunner judge --batch; remove the file or choose another --out", path, len(lines)+1))
		}
		lines = append(lines, resumedLine{line: r.Line, requestID: r.RequestID})
		sum.AddResumed(r)
		good += int64(len(raw))
	}
	if err := f.Truncate(good); err != nil {
		return fail(err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		return fail(err)
	}
	return f, lines, nil
}

// resumeMismatch is a results file written for another input.
type resumeMismatch struct{ msg string }

func (e *resumeMismatch) Error() string { return e.msg }

// checkResumed checks that the skipped input lines are those the
// results were written for: a line with a result has its request_id.
func checkResumed(lines []resumedLine, out string) func(line int, raw []byte) error {
	want := make(map[int]string, len(lines))
	for _, l := range lines {
		want[l.line] = l.requestID
	}
	return func(line int, raw []byte) error {
		id, ok := want[line]
		if !ok {
			return nil
		}
		var r struct {
			RequestID string `json:"request_id"`
		}
		_ = json.Unmarshal(raw, &r)
		if r.RequestID != id {
			return &resumeMismatch{fmt.Sprintf("--out %s holds results of another input: line %d has request_id %q there and %q here; remove it or choose another --out",
				out, line, id, r.RequestID)}
		}
		return nil
	}
}

// batchProgress draws one line on a terminal: a bar when the number of
// lines is known, the rate, the time left and the pass rate.
type batchProgress struct {
	w     io.Writer
	total int
	mu    sync.Mutex
	last  time.Time
}

func (p *batchProgress) update(s *batch.Summary) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	judged, run, passed, perSecond := s.Snapshot()
	var b strings.Builder
	b.WriteString("\r\x1b[K")
	if p.total > 0 {
		const width = 24
		filled := min(width, run*width/p.total)
		fmt.Fprintf(&b, "[%s%s] %d/%d", strings.Repeat("#", filled), strings.Repeat(".", width-filled), run, p.total)
	} else {
		fmt.Fprintf(&b, "%d judged", run)
	}
	fmt.Fprintf(&b, "  %.1f/s", perSecond)
	if p.total > 0 && perSecond > 0 && run < p.total {
		left := time.Duration(float64(p.total-run) / perSecond * float64(time.Second)).Round(time.Second)
		fmt.Fprintf(&b, "  ETA %s", left)
	}
	if judged > 0 {
		fmt.Fprintf(&b, "  passed %d (%.1f%%)", passed, 100*float64(passed)/float64(judged))
	}
	_, _ = io.WriteString(p.w, b.String())
}

func (p *batchProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = io.WriteString(p.w, "\r\x1b[K")
}
