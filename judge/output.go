package judge

import (
	"bytes"
	"context"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/coderunner/coderunner/sandbox"
)

// RunOutput asks a run to hand its output to writers as it is produced.
type RunOutput struct {
	// Stdout and Stderr receive each stream, up to limits.OutputBytes.
	Stdout, Stderr io.Writer
	// Keep bounds how much of each stream the run's Result keeps; zero
	// keeps everything up to limits.OutputBytes.
	Keep int64
}

// StreamingProgram is a Program that can hand a run's output to writers as
// it is produced, keeping only the start of it in the Result. The judge
// uses it when an Engine's programs have it, so that no run's output is
// held whole to be judged; runner.Program is one.
type StreamingProgram interface {
	Program
	// RunStreaming is Run with out's writers receiving the output as it
	// is produced and the Result keeping at most out.Keep bytes of each
	// stream.
	RunStreaming(ctx context.Context, stdin []byte, limits sandbox.Limits, out RunOutput) (*sandbox.Result, error)
}

// RunWithOutput runs prog once, handing its output to out: as it streams
// when prog is a StreamingProgram, else from the Result once the run is
// over. Either way the Result it returns keeps at most out.Keep bytes of
// each stream. Wrappers of a Program (such as one reporting progress)
// call it to stream through.
func RunWithOutput(ctx context.Context, prog Program, stdin []byte, limits sandbox.Limits, out RunOutput) (*sandbox.Result, error) {
	if sp, ok := prog.(StreamingProgram); ok {
		return sp.RunStreaming(ctx, stdin, limits, out)
	}
	res, err := prog.Run(ctx, stdin, limits)
	if err != nil || res == nil {
		return res, err
	}
	r := *res
	for _, s := range []struct {
		w io.Writer
		b *[]byte
	}{{out.Stdout, &r.Stdout}, {out.Stderr, &r.Stderr}} {
		if s.w != nil && len(*s.b) > 0 {
			_, _ = s.w.Write(*s.b)
		}
		if out.Keep > 0 && int64(len(*s.b)) > out.Keep {
			*s.b = (*s.b)[:out.Keep]
		}
	}
	return &r, nil
}

// sink takes in one stream of a run: it counts it, gives it to a Matcher
// (stdout) and looks for a marker in it across writes (stderr, for a JVM's
// OutOfMemoryError).
type sink struct {
	mu    sync.Mutex
	n     int64
	match Matcher
	// held, when set, keeps the stream whole (up to its limit) for a
	// checker.
	held  *boundedBuffer
	find  []byte
	tail  []byte // the last len(find)-1 bytes written
	found bool
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n += int64(len(p))
	if s.match != nil {
		_, _ = s.match.Write(p)
	}
	if s.held != nil {
		_, _ = s.held.Write(p)
	}
	if len(s.find) > 0 && !s.found {
		k := len(s.find) - 1
		edge := make([]byte, 0, 2*k)
		edge = append(append(edge, s.tail...), p[:min(len(p), k)]...)
		s.found = bytes.Contains(edge, s.find) || bytes.Contains(p, s.find)
		if len(p) >= k {
			s.tail = append(s.tail[:0], p[len(p)-k:]...)
		} else {
			s.tail = append(s.tail[:0], edge[max(0, len(edge)-k):]...)
		}
	}
	return len(p), nil
}

func (s *sink) written() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *sink) contains() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.found
}

// output is what the judge takes in of one run: stdout judged against the
// test's expected output as it streams, both streams counted, stderr
// searched for a JVM's OutOfMemoryError. Nothing of it grows with the
// output.
type output struct {
	stdout, stderr sink
	// held is the whole stdout, for a checker; nil otherwise.
	held *boundedBuffer
}

// newToolOutput is the output of a run a checker or an interactor judges:
// stdout accepted as it comes, and held whole up to limit bytes for a
// checker (limit zero holds nothing: an interactor saw it already).
func newToolOutput(limit int64) *output {
	o := &output{}
	o.stdout.match = acceptAll{}
	o.stderr.find = javaOOM
	if limit > 0 {
		o.held = &boundedBuffer{limit: limit}
		o.stdout.held = o.held
	}
	return o
}

func newOutput(cmp Comparator, tc TestCase) *output {
	o := &output{}
	o.stdout.match = NewMatcher(cmp, tc.ExpectedOutput)
	o.stderr.find = javaOOM
	return o
}

func (o *output) runOutput(keep int64) RunOutput {
	return RunOutput{Stdout: &o.stdout, Stderr: &o.stderr, Keep: keep}
}

// budget is what a request's results may still keep of the programs'
// output, across its tests; nil is no budget.
type budget struct {
	mu   sync.Mutex
	left int64
}

// take returns the start of s that the budget still allows (cut at a rune
// boundary) and charges it, and whether s was cut.
func (b *budget) take(s string) (string, bool) {
	if b == nil {
		return s, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	kept, cut := prefix(s, b.left)
	b.left -= int64(len(kept))
	return kept, cut
}

// prefix returns at most the first n bytes of s, not ending in a rune cut
// in two, and whether that is less than s.
func prefix(s string, n int64) (string, bool) {
	if int64(len(s)) <= n {
		return s, false
	}
	return dropSplitRune(s[:max(n, 0)]), true
}

// dropSplitRune removes from the end of s, the start of a longer output,
// the first bytes of a rune the cut split.
func dropSplitRune(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return s[:i]
			}
			break
		}
	}
	return s
}
