// Package batch judges many solutions, one judge request per line of a
// JSON Lines input, as teams evaluating models do: all cores busy,
// results in input order, a summary at the end (pass rate overall and by
// language, the verdicts, pass@k per problem), resumable after an
// interruption.
package batch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"
	"time"

	"github.com/coderunner/coderunner/internal/strictjson"
	"github.com/coderunner/coderunner/judge"
)

// MaxLineBytes bounds one input line: a judge request's own bound.
const MaxLineBytes = judge.MaxRequestBytes

// maxCachedSets bounds the shared test sets kept in memory at once (each
// is at most judge.MaxTestDataBytes); past it they are read again.
const maxCachedSets = 8

// Line is one input line: a judge request, with the problem it answers
// (samples of one problem make its pass@k) and, in place of its own
// test_cases, the name of a shared test set.
type Line struct {
	judge.ExecutionRequest
	// ProblemID groups the samples of one problem for pass@k.
	ProblemID string `json:"problem_id,omitempty"`
	// TestSet names a shared set of tests (Options.TestSets) used when
	// the line has no test_cases of its own.
	TestSet string `json:"test_set,omitempty"`
}

// Result is one output line: the judge's result with the input line's
// number (1-based, counting every line of the input), its problem and
// its language.
type Result struct {
	Line      int    `json:"line"`
	ProblemID string `json:"problem_id,omitempty"`
	Language  string `json:"language"`
	judge.ExecutionResult
}

// Options configure Run.
type Options struct {
	// Judge judges one request; required.
	Judge func(context.Context, judge.ExecutionRequest) judge.ExecutionResult
	// Workers is how many requests are judged at once; default 1.
	Workers int
	// TestSets returns the tests of a named shared set; nil refuses lines
	// that name one.
	TestSets func(name string) ([]judge.TestCase, error)
	// Skip is how many lines of the input were judged by an earlier run
	// (their results are already written): they are read and not judged.
	Skip int
	// Check, when set, is given each skipped line: an error stops Run
	// (the results were written for another input).
	Check func(line int, raw []byte) error
	// Summary receives every result written, and is returned by Run; nil
	// makes a new one.
	Summary *Summary
	// Progress, when set, is called after each result is written, from
	// the goroutine that writes them.
	Progress func(*Summary)
}

// testSetName is what a test_set may be called: a file name without a
// directory.
var testSetName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// ValidTestSetName reports whether name may name a shared test set.
func ValidTestSetName(name string) bool { return testSetName.MatchString(name) }

// job is one line to judge, and where its result goes.
type job struct {
	line int
	req  judge.ExecutionRequest
	pid  string
	err  error // the line was refused before judging
	done chan Result
}

// Run judges every line of in and writes one result per judged line to
// out, in input order, each as one line of JSON. Blank lines are
// skipped. A line that is not a valid request gets a sandbox_error result
// (VALIDATION_ERROR) like any refused request; only a failure to read the
// input or to write the output stops Run. When ctx ends, the lines being
// judged are abandoned (a later run with Skip resumes there) and Run
// returns ctx's error.
func Run(ctx context.Context, in io.Reader, out io.Writer, opts Options) (*Summary, error) {
	if opts.Judge == nil {
		return nil, errors.New("batch: no judge")
	}
	workers := max(opts.Workers, 1)
	sum := opts.Summary
	if sum == nil {
		sum = NewSummary()
	}
	sum.start()

	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	// Lines are read in order and handed to the workers; their result
	// channels go, in the same order, to the writer. Both channels are
	// bounded, so that at most 2*workers results wait for an earlier one.
	pending := make(chan *job, workers)
	todo := make(chan *job)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range todo {
				j.done <- judgeOne(ctx, opts, j)
			}
		})
	}

	readErr := make(chan error, 1)
	go func() {
		defer close(pending)
		defer close(todo)
		readErr <- readLines(ctx, in, opts, func(j *job) bool {
			select {
			case pending <- j:
			case <-ctx.Done():
				return false
			}
			select {
			case todo <- j:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()

	bw := bufio.NewWriter(out)
	var werr error
	for j := range pending {
		var r Result
		select {
		case r = <-j.done:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		if werr = writeResult(bw, r); werr != nil {
			cancel(werr)
			break
		}
		sum.Add(r)
		if opts.Progress != nil {
			opts.Progress(sum)
		}
	}
	cancel(nil)
	// Drain what the reader still hands over, so that it ends.
	go func() {
		for range pending {
		}
	}()
	wg.Wait()
	rerr := <-readErr
	sum.stop()
	switch {
	case werr != nil:
		return sum, fmt.Errorf("writing the results: %w", werr)
	case parent.Err() != nil:
		return sum, parent.Err()
	case rerr != nil && !errors.Is(rerr, context.Canceled):
		return sum, rerr
	}
	return sum, nil
}

// writeResult writes r as one line and flushes it, so that an
// interrupted run leaves only whole lines behind.
func writeResult(w *bufio.Writer, r Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		return err
	}
	return w.Flush()
}

// judgeOne judges a job, or refuses it.
func judgeOne(ctx context.Context, opts Options, j *job) Result {
	r := Result{Line: j.line, ProblemID: j.pid, Language: j.req.Language}
	if j.err != nil {
		r.ExecutionResult = judge.InvalidRequestResult(j.req.RequestID, j.err, 0)
		return r
	}
	r.ExecutionResult = opts.Judge(ctx, j.req)
	return r
}

// readLines reads the input line by line and hands each line past
// opts.Skip to hand, which reports false when reading should stop.
func readLines(ctx context.Context, in io.Reader, opts Options, hand func(*job) bool) error {
	br := bufio.NewReaderSize(in, 64<<10)
	sets := map[string][]judge.TestCase{}
	for n := 1; ; n++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		raw, err := readLine(br)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil && !errors.Is(err, errLineTooLong) {
			return fmt.Errorf("reading line %d: %w", n, err)
		}
		if n <= opts.Skip {
			if opts.Check != nil && err == nil {
				if err := opts.Check(n, raw); err != nil {
					return err
				}
			}
			continue
		}
		if err == nil && len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		j := &job{line: n, done: make(chan Result, 1)}
		if err != nil {
			j.err = fmt.Errorf("line %d is longer than %d bytes", n, maxLineBytes)
		} else {
			j.req, j.pid, j.err = decodeLine(raw, opts, sets)
		}
		if !hand(j) {
			return ctx.Err()
		}
	}
}

// maxLineBytes is MaxLineBytes, smaller in tests.
var maxLineBytes = MaxLineBytes

var errLineTooLong = errors.New("the line is too long")

// readLine returns the next line without its end; a line over
// MaxLineBytes is read to its end and refused with errLineTooLong. The
// last line needs no newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) <= maxLineBytes+1 {
			line = append(line, chunk...)
		} else {
			// Keep reading to the end of the line, holding nothing.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errLineTooLong
		}
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}

// decodeLine decodes one request, strictly, taking a shared test set when
// it names one. Its error refuses the line; the request keeps what could
// be read of it (its request_id) for the refusal.
func decodeLine(raw []byte, opts Options, sets map[string][]judge.TestCase) (judge.ExecutionRequest, string, error) {
	var l Line
	dec := strictjson.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&l); err != nil {
		// What can be read of it names it in the result.
		var id struct {
			RequestID string `json:"request_id"`
			Language  string `json:"language"`
			ProblemID string `json:"problem_id"`
		}
		_ = json.Unmarshal(raw, &id)
		return judge.ExecutionRequest{RequestID: id.RequestID, Language: id.Language}, id.ProblemID, strictjson.Explain(err, raw, &l)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return l.ExecutionRequest, l.ProblemID, errors.New("unexpected data after the request object")
	}
	if l.TestSet != "" {
		if len(l.TestCases) > 0 {
			return l.ExecutionRequest, l.ProblemID, errors.New("test_set and test_cases: give one or the other")
		}
		if opts.TestSets == nil {
			return l.ExecutionRequest, l.ProblemID, fmt.Errorf("test_set %q: no shared test sets were given", l.TestSet)
		}
		if !ValidTestSetName(l.TestSet) {
			return l.ExecutionRequest, l.ProblemID, fmt.Errorf("test_set %q: not a test set name (letters, digits, '_', '.', '-')", l.TestSet)
		}
		tests, ok := sets[l.TestSet]
		if !ok {
			var err error
			if tests, err = opts.TestSets(l.TestSet); err != nil {
				return l.ExecutionRequest, l.ProblemID, fmt.Errorf("test_set %q: %w", l.TestSet, err)
			}
			if len(sets) >= maxCachedSets {
				clear(sets)
			}
			sets[l.TestSet] = tests
		}
		l.TestCases = tests
	}
	return l.ExecutionRequest, l.ProblemID, nil
}

// clock is the time source of a summary's rate; tests replace it.
var clock = time.Now
