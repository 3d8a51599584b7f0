package judge

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/coderunner/coderunner/sandbox"
)

// An expected output longer than the ceiling of the cap is refused: no
// answer could fit, and request data does not raise the cap past it.
func TestExpectedOutputOverCeiling(t *testing.T) {
	e := newEngine(map[string]script{"a": prints("")})
	j := New(e, Options{Parallel: 1, MaxOutputCeilingKB: 150})
	res := j.Execute(context.Background(), request("python", "code",
		TestCase{ID: "big", Input: "a", ExpectedOutput: strings.Repeat("y", 150<<10+1)}))
	if res.Status != StatusSandboxError || res.ErrorInfo == nil || res.ErrorInfo.Code != CodeValidationError ||
		!strings.Contains(res.ErrorInfo.Message, `Expected output of test "big" too large`) {
		t.Fatalf("result %s %+v, want a validation error naming the test", res.Status, res.ErrorInfo)
	}
	if e.prepared() != 0 {
		t.Error("a refused request was compiled")
	}
}

// TestKeptOutputBounded: each test keeps at most KeptOutputKB of stdout
// and of stderr, the whole result at most KeptOutputTotalKB; the verdicts
// are on the whole outputs and truncated says what was cut.
func TestKeptOutputBounded(t *testing.T) {
	ten := strings.Repeat("a", 10<<10)
	e := newEngine(map[string]script{
		"pass":   prints(ten),
		"late":   prints(ten[:len(ten)-1] + "b"),
		"crash":  exits(1, "", strings.Repeat("e", 10<<10)),
		"small":  prints("small"),
		"crash2": exits(2, "", "boom"),
		"empty":  prints(""),
	})
	j := New(e, Options{Parallel: 1, KeptOutputKB: 1, KeptOutputTotalKB: 3})
	res := j.Execute(context.Background(), request("python", "code",
		TestCase{ID: "pass", Input: "pass", ExpectedOutput: ten},
		TestCase{ID: "late", Input: "late", ExpectedOutput: ten},
		TestCase{ID: "crash", Input: "crash", ExpectedOutput: "x"},
		TestCase{ID: "small", Input: "small", ExpectedOutput: "small"},
		TestCase{ID: "crash2", Input: "crash2", ExpectedOutput: "x"},
		TestCase{ID: "empty", Input: "empty", ExpectedOutput: ""},
	))
	want := []struct {
		status    TestStatus
		out, msg  string
		truncated bool
	}{
		{TestPassed, ten[:1024], "", true},
		{TestWrongAnswer, ten[:1024], "", true},
		{TestRuntimeError, "", strings.Repeat("e", 1024), true},
		{TestPassed, "", "", true},                   // the budget is spent
		{TestRuntimeError, "", "Exit code: 2", true}, // how it ended, not what it wrote
		{TestPassed, "", "", false},
	}
	if len(res.TestResults) != len(want) {
		t.Fatalf("%s: %d results", res.Status, len(res.TestResults))
	}
	for i, w := range want {
		tr := res.TestResults[i]
		if tr.Status != w.status || tr.ActualOutput != w.out || deref(tr.ErrorMessage) != w.msg || tr.Truncated != w.truncated {
			t.Errorf("test %s: %s, %d bytes of output, message %.20q, truncated %v; want %s, %d bytes, %.20q, %v",
				tr.TestID, tr.Status, len(tr.ActualOutput), deref(tr.ErrorMessage), tr.Truncated, w.status, len(w.out), w.msg, w.truncated)
		}
	}
	if res.Summary != "3/6 test cases passed" {
		t.Errorf("summary %q", res.Summary)
	}
}

// The summary of a runtime error quotes its bounded message.
func TestRuntimeErrorSummaryBounded(t *testing.T) {
	e := newEngine(map[string]script{"a": exits(1, "", strings.Repeat("e", 100<<10))})
	res := New(e, Options{Parallel: 1, KeptOutputKB: 1}).Execute(context.Background(),
		request("python", "code", TestCase{ID: "a", Input: "a", ExpectedOutput: "x"}))
	if res.Status != StatusRuntimeError || len(res.Summary) > 1100 || len(res.ErrorInfo.Message) != 1024 {
		t.Errorf("%s: summary of %d bytes, message of %d", res.Status, len(res.Summary), len(res.ErrorInfo.Message))
	}
}

// A JVM's OutOfMemoryError is found in stderr past what a test keeps.
func TestJavaOOMPastKeptOutput(t *testing.T) {
	stderr := strings.Repeat("noise\n", 20<<10) + "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space\n"
	e := newEngine(map[string]script{"a": exits(1, "", stderr)})
	res := New(e, Options{Parallel: 1, KeptOutputKB: 1}).Execute(context.Background(),
		request("java", "code", TestCase{ID: "a", Input: "a", ExpectedOutput: "x"}))
	if got := statuses(res); len(got) != 1 || got[0] != TestMemoryExceeded {
		t.Errorf("statuses %v, want memory_exceeded", got)
	}
}

func TestSinkFindsAcrossWrites(t *testing.T) {
	text := []byte("abc java.lang.OutOfMemoryError def")
	for step := 1; step <= len(text); step++ {
		s := &sink{find: javaOOM}
		for i := 0; i < len(text); i += step {
			_, _ = s.Write(text[i:min(i+step, len(text))])
		}
		if !s.contains() || s.written() != int64(len(text)) {
			t.Errorf("writes of %d bytes: found %v, %d bytes counted", step, s.contains(), s.written())
		}
		s = &sink{find: javaOOM}
		for i := 0; i < len(text); i += step {
			chunk := bytes.Replace(text[i:min(i+step, len(text))], []byte("M"), []byte("m"), 1)
			_, _ = s.Write(chunk)
		}
		if s.contains() {
			t.Errorf("writes of %d bytes: found a marker that is not there", step)
		}
	}
}

// streamingProgram writes its output to the run's writers in pieces and
// keeps only out.Keep bytes of it in the Result, as runner.Program does.
type streamingProgram struct {
	fakeProgram
	stdout string
	mu     sync.Mutex
	keep   int64
}

func (p *streamingProgram) RunStreaming(_ context.Context, _ []byte, _ sandbox.Limits, out RunOutput) (*sandbox.Result, error) {
	p.mu.Lock()
	p.keep = out.Keep
	p.mu.Unlock()
	for s := p.stdout; len(s) > 0; {
		n := min(len(s), 7)
		_, _ = out.Stdout.Write([]byte(s[:n]))
		s = s[n:]
	}
	return result(sandbox.StatusOK, p.stdout[:min(int64(len(p.stdout)), out.Keep)], ""), nil
}

type streamingEngine struct{ p *streamingProgram }

func (e streamingEngine) Prepare(context.Context, string, string, ProgramOptions) (Program, error) {
	return e.p, nil
}

// A StreamingProgram is judged on what it streams: the Result holds only
// the start of the output.
func TestStreamingProgramJudgedOnTheStream(t *testing.T) {
	out := strings.Repeat("1 2 3\n", 1000)
	for _, tt := range []struct {
		expected string
		want     TestStatus
	}{
		{out, TestPassed},
		{out + "4", TestWrongAnswer},
		{strings.Repeat("1 2 3\n", 999) + "1 2 4\n", TestWrongAnswer},
	} {
		p := &streamingProgram{stdout: out}
		res := New(streamingEngine{p}, Options{Parallel: 1, KeptOutputKB: 1}).Execute(context.Background(),
			request("python", "code", TestCase{ID: "a", Input: "a", ExpectedOutput: tt.expected}))
		if got := statuses(res); len(got) != 1 || got[0] != tt.want {
			t.Errorf("statuses %v, want %s", got, tt.want)
			continue
		}
		if tr := res.TestResults[0]; len(tr.ActualOutput) != 1024 || !tr.Truncated || p.keep != 1024 {
			t.Errorf("kept %d bytes (truncated %v), asked to keep %d", len(tr.ActualOutput), tr.Truncated, p.keep)
		}
	}
}

func TestPrefix(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int64
		want string
		cut  bool
	}{
		{"abc", 3, "abc", false},
		{"abc", 5, "abc", false},
		{"abc", 2, "ab", true},
		{"aé", 2, "a", true},
		{"aé", 3, "aé", false},
		{"a€b", 3, "a", true},
		{"a€b", 4, "a€", true},
		{"a\xff\xfeb", 3, "a\xff\xfe", true},
		{"abc", 0, "", true},
	} {
		got, cut := prefix(tt.s, tt.n)
		if got != tt.want || cut != tt.cut {
			t.Errorf("prefix(%q, %d) = %q, %v; want %q, %v", tt.s, tt.n, got, cut, tt.want, tt.cut)
		}
	}
}
