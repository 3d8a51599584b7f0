package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coderunner/coderunner/judge"
)

// fakeJudge passes a request whose code is "ok", fails any other, and
// blocks a request whose code starts with "wait" until release is closed.
type fakeJudge struct {
	release  chan struct{}
	running  atomic.Int32
	peak     atomic.Int32
	mu       sync.Mutex
	requests []judge.ExecutionRequest
}

func newFakeJudge() *fakeJudge { return &fakeJudge{release: make(chan struct{})} }

func (f *fakeJudge) judge(ctx context.Context, req judge.ExecutionRequest) judge.ExecutionResult {
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	if strings.HasPrefix(req.Code, "wait") {
		select {
		case <-f.release:
		case <-ctx.Done():
			return judge.ExecutionResult{RequestID: req.RequestID, Status: judge.StatusSandboxError}
		}
	}
	res := judge.ExecutionResult{RequestID: req.RequestID, Status: judge.StatusAllPassed, TestResults: []judge.TestResult{}}
	if !strings.HasSuffix(req.Code, "ok") {
		res.Status = judge.StatusAllFailed
	}
	return res
}

func line(id, code, language string, extra ...string) string {
	l := fmt.Sprintf(`{"request_id":%q,"code":%q,"language":%q,"test_cases":[{"input":"","expected_output":"1"}]`, id, code, language)
	for _, e := range extra {
		l += "," + e
	}
	return l + "}"
}

func results(t *testing.T, out string) []Result {
	t.Helper()
	var rs []Result
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		var r Result
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("result line %q: %v", l, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// TestResultsInInputOrder: line 1 finishes last, yet comes first; a blank
// line is skipped but counted; bad lines are refused with their line
// number, and the batch goes on.
func TestResultsInInputOrder(t *testing.T) {
	f := newFakeJudge()
	input := strings.Join([]string{
		line("a", "wait ok", "python"),
		line("b", "ok", "python"),
		"",
		line("c", "bad", "cpp"),
		`{"request_id":"d","code":"ok","language":"c","test_cases":[{"expected_answer":"1"}]}`,
		`not json`,
		line("e", "ok", "c", `"problem_id":"p"`) + " trailing",
		line("f", "ok", "cpp"),
	}, "\n")
	go func() {
		// Let the later lines finish first: b and c are judged while a
		// waits (with three workers, three lines wait for the writer).
		for len(f.reqs()) < 3 {
			time.Sleep(time.Millisecond)
		}
		close(f.release)
	}()
	var out bytes.Buffer
	sum, err := Run(context.Background(), strings.NewReader(input), &out, Options{Judge: f.judge, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	rs := results(t, out.String())
	wantLines := []int{1, 2, 4, 5, 6, 7, 8}
	if len(rs) != len(wantLines) {
		t.Fatalf("%d results:\n%s", len(rs), out.String())
	}
	for i, r := range rs {
		if r.Line != wantLines[i] {
			t.Errorf("result %d is of line %d, want %d", i, r.Line, wantLines[i])
		}
	}
	if rs[0].RequestID != "a" || rs[0].Status != judge.StatusAllPassed || rs[2].Status != judge.StatusAllFailed || rs[2].Language != "cpp" {
		t.Errorf("results %+v", rs[:3])
	}
	for i, want := range map[int]string{3: "test_cases[0].expected_answer: unknown field", 4: "invalid character", 5: "unexpected data after the request object"} {
		r := rs[i]
		if r.Status != judge.StatusSandboxError || r.ErrorInfo == nil || r.ErrorInfo.Code != judge.CodeValidationError || !strings.Contains(r.ErrorInfo.Message, want) {
			t.Errorf("line %d: %+v", r.Line, r.ErrorInfo)
		}
	}
	if rs[3].RequestID != "d" || rs[5].ProblemID != "p" {
		t.Errorf("a refused line keeps what could be read: %+v / %+v", rs[3], rs[5])
	}
	if sum.Judged != 7 || sum.Passed != 3 || sum.Verdicts["sandbox_error"] != 3 || sum.ByLanguage["python"].Passed != 2 {
		t.Errorf("summary %+v", sum.Totals)
	}
}

func TestWorkersAllBusy(t *testing.T) {
	f := newFakeJudge()
	var lines []string
	for i := range 8 {
		lines = append(lines, line(fmt.Sprint(i), "wait ok", "python"))
	}
	go func() {
		for f.running.Load() < 4 {
			time.Sleep(time.Millisecond)
		}
		close(f.release)
	}()
	var out bytes.Buffer
	if _, err := Run(context.Background(), strings.NewReader(strings.Join(lines, "\n")), &out, Options{Judge: f.judge, Workers: 4}); err != nil {
		t.Fatal(err)
	}
	if p := f.peak.Load(); p != 4 {
		t.Errorf("at most %d requests judged at once, want 4", p)
	}
	if len(results(t, out.String())) != 8 {
		t.Errorf("results:\n%s", out.String())
	}
}

// TestSkipResumes: the lines an earlier run judged are not judged again.
func TestSkipResumes(t *testing.T) {
	f := newFakeJudge()
	input := strings.Join([]string{line("a", "ok", "c"), line("b", "ok", "c"), "", line("c", "ok", "c")}, "\n")
	var out bytes.Buffer
	if _, err := Run(context.Background(), strings.NewReader(input), &out, Options{Judge: f.judge, Skip: 2}); err != nil {
		t.Fatal(err)
	}
	rs := results(t, out.String())
	if len(rs) != 1 || rs[0].Line != 4 || len(f.requests) != 1 || f.requests[0].RequestID != "c" {
		t.Errorf("judged %+v, wrote %+v", f.requests, rs)
	}
}

// TestInterruptedLeavesWholeLines: cancelled while a line is judged, Run
// writes only the results before it, each a whole line.
func TestInterruptedLeavesWholeLines(t *testing.T) {
	f := newFakeJudge()
	input := strings.Join([]string{line("a", "ok", "c"), line("b", "wait", "c"), line("c", "ok", "c")}, "\n")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for f.running.Load() < 1 || len(f.reqs()) < 2 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	var out bytes.Buffer
	_, err := Run(ctx, strings.NewReader(input), &out, Options{Judge: f.judge, Workers: 1})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
	rs := results(t, out.String())
	if len(rs) != 1 || rs[0].RequestID != "a" || !strings.HasSuffix(out.String(), "}\n") {
		t.Errorf("wrote %q", out.String())
	}
}

func (f *fakeJudge) reqs() []judge.ExecutionRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slicesClone(f.requests)
}

func slicesClone[T any](s []T) []T { return append([]T(nil), s...) }

func TestTestSets(t *testing.T) {
	f := newFakeJudge()
	loads := 0
	sets := func(name string) ([]judge.TestCase, error) {
		loads++
		if name == "sum" {
			return []judge.TestCase{{ID: "t1", Input: "1 2", ExpectedOutput: "3"}, {ID: "t2", Input: "2 2", ExpectedOutput: "4"}}, nil
		}
		return nil, errors.New("no such test set")
	}
	input := strings.Join([]string{
		`{"request_id":"a","code":"ok","language":"c","test_set":"sum"}`,
		`{"request_id":"b","code":"ok","language":"c","test_set":"sum"}`,
		`{"request_id":"c","code":"ok","language":"c","test_set":"nope"}`,
		`{"request_id":"d","code":"ok","language":"c","test_set":"../etc/passwd"}`,
		`{"request_id":"e","code":"ok","language":"c","test_set":"sum","test_cases":[{"expected_output":"1"}]}`,
	}, "\n")
	var out bytes.Buffer
	if _, err := Run(context.Background(), strings.NewReader(input), &out, Options{Judge: f.judge, TestSets: sets}); err != nil {
		t.Fatal(err)
	}
	rs := results(t, out.String())
	if len(f.requests) != 2 || len(f.requests[1].TestCases) != 2 || f.requests[1].TestCases[1].ExpectedOutput != "4" {
		t.Errorf("judged %+v", f.requests)
	}
	if loads != 2 {
		t.Errorf("test sets read %d times, want 2 (sum once, nope once)", loads)
	}
	for i, want := range map[int]string{2: "no such test set", 3: "not a test set name", 4: "give one or the other"} {
		if rs[i].ErrorInfo == nil || !strings.Contains(rs[i].ErrorInfo.Message, want) {
			t.Errorf("line %d: %+v", rs[i].Line, rs[i].ErrorInfo)
		}
	}
	// Without shared sets, a line that names one is refused.
	out.Reset()
	if _, err := Run(context.Background(), strings.NewReader(`{"code":"ok","language":"c","test_set":"sum"}`), &out, Options{Judge: f.judge}); err != nil {
		t.Fatal(err)
	}
	if rs := results(t, out.String()); rs[0].ErrorInfo == nil || !strings.Contains(rs[0].ErrorInfo.Message, "no shared test sets") {
		t.Errorf("%+v", rs[0].ErrorInfo)
	}
}

func TestLongLineRefused(t *testing.T) {
	defer func(n int) { maxLineBytes = n }(maxLineBytes)
	maxLineBytes = 200
	f := newFakeJudge()
	long := line("long", strings.Repeat("x", 300), "c")
	input := line("a", "ok", "c") + "\n" + long + "\n" + line("b", "ok", "c")
	var out bytes.Buffer
	if _, err := Run(context.Background(), strings.NewReader(input), &out, Options{Judge: f.judge}); err != nil {
		t.Fatal(err)
	}
	rs := results(t, out.String())
	if len(rs) != 3 || rs[1].Line != 2 || rs[1].ErrorInfo == nil || !strings.Contains(rs[1].ErrorInfo.Message, "longer than 200 bytes") || rs[2].RequestID != "b" {
		t.Errorf("results %+v", rs)
	}
}

func TestPassAtK(t *testing.T) {
	for _, tc := range []struct {
		n, c, k int
		want    float64
	}{
		{10, 3, 1, 0.3},
		{10, 3, 5, 1 - 21.0/252},
		{10, 0, 5, 0},
		{10, 10, 10, 1},
		{5, 4, 2, 1},
		{200, 1, 1, 0.005},
	} {
		if got := passAtK(tc.n, tc.c, tc.k); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("pass@%d of %d with %d correct = %v, want %v", tc.k, tc.n, tc.c, got, tc.want)
		}
	}
}

func TestSummary(t *testing.T) {
	s := NewSummary()
	score := func(v float64) *float64 { return &v }
	add := func(pid, lang string, st judge.ExecutionStatus) {
		s.Add(Result{ProblemID: pid, Language: lang, ExecutionResult: judge.ExecutionResult{Status: st}})
	}
	for i := range 10 {
		st := judge.StatusAllFailed
		if i < 3 {
			st = judge.StatusAllPassed
		}
		add("p1", "python", st)
	}
	for range 5 {
		add("p2", "cpp", judge.StatusCompilationError)
	}
	s.AddResumed(Result{Language: "cpp", ExecutionResult: judge.ExecutionResult{Status: judge.StatusSomePassed, Score: score(30), MaxScore: score(100)}})
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Judged, Passed, Resumed int
		PassRate                float64           `json:"pass_rate"`
		ByLanguage              map[string]Counts `json:"by_language"`
		Verdicts                map[string]int
		PassAtK                 map[string]float64 `json:"pass_at_k"`
		Problems                map[string]Problem
		Score                   float64
		MaxScore                float64 `json:"max_score"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Judged != 16 || got.Passed != 3 || got.Resumed != 1 || got.PassRate != 0.1875 {
		t.Errorf("totals: %s", b)
	}
	if got.ByLanguage["python"] != (Counts{Judged: 10, Passed: 3, PassRate: 0.3}) || got.ByLanguage["cpp"].Judged != 6 {
		t.Errorf("by language: %s", b)
	}
	if got.Verdicts["compilation_error"] != 5 || got.Verdicts["all_failed"] != 7 || got.Verdicts["some_passed"] != 1 {
		t.Errorf("verdicts: %s", b)
	}
	// pass@1: (0.3 + 0) / 2; pass@5: (0.9167 + 0) / 2; pass@10: p1 alone.
	if got.PassAtK["1"] != 0.15 || got.PassAtK["5"] != 0.4583 || got.PassAtK["10"] != 1 || got.Problems["p2"].PassAtK["10"] != 0 && len(got.Problems["p2"].PassAtK) != 2 {
		t.Errorf("pass@k: %s", b)
	}
	if got.Score != 30 || got.MaxScore != 100 {
		t.Errorf("score: %s", b)
	}
	var text bytes.Buffer
	s.WriteText(&text)
	for _, want := range []string{"judged 16, passed 3 (18.8%)", "1 from an earlier run", "python", "3/10 passed", "all_failed 7", "pass@1 0.1500", "over 2 problems", "score: 30/100"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

// TestTypeErrorsNameTheField: a line with a value of the wrong type is
// refused naming the field as the line writes it, its own fields
// (problem_id, test_set) and the request's at any depth alike.
func TestTypeErrorsNameTheField(t *testing.T) {
	lines := []struct{ line, msg string }{
		{line("a", "ok", "python", `"problem_id":5`), "problem_id: must be a string, not a JSON number"},
		{line("b", "ok", "python", `"test_set":["x"]`), "test_set: must be a string, not a JSON array"},
		{`{"request_id":"c","code":"ok","language":"c","test_cases":[{"input":""},{"input":1}]}`, "test_cases[1].input: must be a string, not a JSON number"},
		{line("d", "ok", "python", `"subtasks":[{"id":"s","points":"all","tests":["a"]}]`), "subtasks[0].points: must be a number, not a JSON string"},
	}
	var input []string
	for _, l := range lines {
		input = append(input, l.line)
	}
	var out bytes.Buffer
	if _, err := Run(context.Background(), strings.NewReader(strings.Join(input, "\n")), &out, Options{Judge: newFakeJudge().judge, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	rs := results(t, out.String())
	if len(rs) != len(lines) {
		t.Fatalf("%d results:\n%s", len(rs), out.String())
	}
	for i, r := range rs {
		if r.ErrorInfo == nil || r.ErrorInfo.Code != judge.CodeValidationError || r.ErrorInfo.Message != lines[i].msg {
			t.Errorf("line %d: %+v, want %q", i+1, r.ErrorInfo, lines[i].msg)
		}
	}
}
