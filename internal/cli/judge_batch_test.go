package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
)

// batchInput writes a batch of Python solutions of "sum", some right,
// some wrong, one refused, and a test set directory for them.
func batchInput(t *testing.T) (input, sets string) {
	t.Helper()
	dir := t.TempDir()
	sets = filepath.Join(dir, "sets")
	if err := os.Mkdir(sets, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sets, "sum.json"), []byte(`[{"id":"t1","input":"1 2\n","expected_output":"3\n"},{"id":"t2","input":"5 5\n","expected_output":"10\n"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := range 6 {
		code := "a, b = map(int, input().split())\nprint(a + b)\n"
		if i%3 == 0 {
			code = "print(0)\n"
		}
		b, _ := json.Marshal(map[string]any{"request_id": fmt.Sprintf("r%d", i), "problem_id": "sum", "language": "python", "code": code, "test_set": "sum"})
		lines = append(lines, string(b))
		if i == 2 {
			lines = append(lines, "")
		}
	}
	lines = append(lines, `{"request_id":"bad","language":"python","code":"print(1)","test_set":"sum","checkr":{}}`)
	input = filepath.Join(dir, "batch.jsonl")
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return input, sets
}

type batchResult struct {
	Line      int    `json:"line"`
	RequestID string `json:"request_id"`
	Status    string `json:"status"`
	ErrorInfo *struct {
		Message string `json:"message"`
	} `json:"error_info"`
}

func readResults(t *testing.T, data string) []batchResult {
	t.Helper()
	var rs []batchResult
	for _, l := range strings.Split(strings.TrimSpace(data), "\n") {
		var r batchResult
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("result %q: %v", l, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// TestJudgeBatch judges a batch on the native backend: results in input
// order on stdout, the summary on stderr and in --summary, a refused line
// answered in its place.
func TestJudgeBatch(t *testing.T) {
	testutil.RequireRoot(t)
	input, sets := batchInput(t)
	summary := filepath.Join(t.TempDir(), "summary.json")
	code, stdout, stderr := runCLI(t, "", "judge", "--batch", input, "--test-sets", sets, "--summary", summary, "--workers", "2")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	rs := readResults(t, stdout)
	wantLines := []int{1, 2, 3, 5, 6, 7, 8}
	if len(rs) != len(wantLines) {
		t.Fatalf("%d results:\n%s", len(rs), stdout)
	}
	for i, r := range rs {
		if r.Line != wantLines[i] {
			t.Errorf("result %d: line %d, want %d", i, r.Line, wantLines[i])
		}
	}
	if rs[0].Status != "all_failed" || rs[1].Status != "all_passed" || rs[6].Status != "sandbox_error" ||
		rs[6].ErrorInfo == nil || !strings.Contains(rs[6].ErrorInfo.Message, "checkr: unknown field") {
		t.Errorf("results %+v", rs)
	}
	for _, want := range []string{"judged 7, passed 4 (57.1%)", "python       4/7 passed", "all_passed 4", "pass@1 0.6667, pass@5 1.0000 over 1 problems"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Judged  int                `json:"judged"`
		Passed  int                `json:"passed"`
		PassAtK map[string]float64 `json:"pass_at_k"`
	}
	if err := json.Unmarshal(b, &sum); err != nil || sum.Judged != 7 || sum.Passed != 4 || sum.PassAtK["1"] != 0.6667 {
		t.Errorf("summary %s (%v)", b, err)
	}
}

// TestJudgeBatchResumes: a results file cut in the middle of a line is
// resumed after its last whole line, and one written for another input
// is refused.
func TestJudgeBatchResumes(t *testing.T) {
	testutil.RequireRoot(t)
	input, sets := batchInput(t)
	out := filepath.Join(t.TempDir(), "results.jsonl")
	if code, _, stderr := runCLI(t, "", "judge", "--batch", input, "--test-sets", sets, "--out", out); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	full, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(full), "\n")
	cut := strings.Join(lines[:3], "") + lines[3][:20]
	if err := os.WriteFile(out, []byte(cut), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "", "judge", "--batch", input, "--test-sets", sets, "--out", out)
	if code != 0 || stdout != "" || !strings.Contains(stderr, "resuming after line 3 (3 results") || !strings.Contains(stderr, "judged 7, passed 4") ||
		!strings.Contains(stderr, "3 from an earlier run") {
		t.Fatalf("resume: exit %d, stdout %q\n%s", code, stdout, stderr)
	}
	again, _ := os.ReadFile(out)
	rs, want := readResults(t, string(again)), readResults(t, string(full))
	if len(rs) != len(want) {
		t.Fatalf("%d results after resuming, want %d", len(rs), len(want))
	}
	for i := range rs {
		if rs[i].Line != want[i].Line || rs[i].RequestID != want[i].RequestID || rs[i].Status != want[i].Status {
			t.Errorf("result %d: %+v, want %+v", i, rs[i], want[i])
		}
	}

	// The same results file with another input.
	other := filepath.Join(t.TempDir(), "other.jsonl")
	data, _ := os.ReadFile(input)
	if err := os.WriteFile(other, []byte(strings.Replace(string(data), `"r1"`, `"x1"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte(strings.Join(lines[:3], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, "", "judge", "--batch", other, "--test-sets", sets, "--out", out)
	if code != 2 || !strings.Contains(stderr, `line 2 has request_id "r1" there and "x1" here`) {
		t.Errorf("another input: exit %d\n%s", code, stderr)
	}
	// A file that holds no results is not overwritten.
	notResults := writeSource(t, "notes.txt", "my notes\n")
	code, _, stderr = runCLI(t, "", "judge", "--batch", input, "--test-sets", sets, "--out", notResults)
	if b, _ := os.ReadFile(notResults); code != 2 || string(b) != "my notes\n" || !strings.Contains(stderr, "is not a result of coderunner judge --batch") {
		t.Errorf("a file of notes: exit %d, %q\n%s", code, b, stderr)
	}
}

func TestJudgeBatchUsage(t *testing.T) {
	input, _ := batchInput(t)
	prog := writeSource(t, "sum.py", "print(1)\n")
	tests := writeSource(t, "tests.json", `[{"input":"","expected_output":"1"}]`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--batch", input, prog}, "--batch takes no FILE"},
		{[]string{"--batch", input, "--workers", "0"}, "--workers: 0 is out of range"},
		{[]string{"--batch", input, "--lang", "python"}, "go in each line"},
		{[]string{"--batch", input, "--entry", "main.py"}, "go in each line"},
		{[]string{"--batch", input, "--test-sets", prog}, "is not a directory"},
		{[]string{"--tests", tests, "--out", "x.jsonl", prog}, "go with --batch"},
		{[]string{"--batch", filepath.Join(t.TempDir(), "missing.jsonl")}, "no such file"},
	} {
		code, _, stderr := runCLI(t, "", append([]string{"judge"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %s", tc.args, code, stderr)
		}
	}
}

// TestBatchExample judges examples/batch, a small set of problems with
// Python and C++ samples (right, wrong, slow and one that does not
// compile), and checks the summary against examples/batch/expected-summary.json.
func TestBatchExample(t *testing.T) {
	testutil.RequireRoot(t)
	dir := filepath.Join("..", "..", "examples", "batch")
	summary := filepath.Join(t.TempDir(), "summary.json")
	code, stdout, stderr := runCLI(t, "", "judge", "--batch", filepath.Join(dir, "solutions.jsonl"),
		"--test-sets", filepath.Join(dir, "sets"), "--summary", summary)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if n := len(readResults(t, stdout)); n != 20 {
		t.Errorf("%d results, want 20", n)
	}
	var got, want map[string]any
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	delete(got, "seconds")
	delete(got, "per_second")
	wb, err := os.ReadFile(filepath.Join(dir, "expected-summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(wb, &want); err != nil {
		t.Fatal(err)
	}
	if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
		t.Errorf("summary\n%s\nwant\n%s", b, wb)
	}
}
