package runner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/judgetest"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
)

// permChecker accepts any permutation of the numbers of the answer file,
// testlib-style: 0 accepted, 1 wrong answer with a message on stdout.
const permChecker = `#include <algorithm>
#include <cstdio>
#include <fstream>
#include <vector>
int main(int argc, char **argv) {
    if (argc != 4) { std::printf("usage: checker INPUT OUTPUT ANSWER\n"); return 3; }
    std::ifstream out(argv[2]), ans(argv[3]);
    std::vector<long long> a, b;
    long long x;
    while (ans >> x) a.push_back(x);
    while (out >> x) b.push_back(x);
    if (!out.eof()) { std::printf("output is not a list of numbers\n"); return 2; }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (a != b) { std::printf("not a permutation of the %zu numbers\n", a.size()); return 1; }
    std::printf("ok %zu numbers\n", a.size());
    return 0;
}
`

// reverser prints the numbers of its input in reverse order, or, for the
// input "junk", something else.
const reverser = `import sys
xs = sys.stdin.read().split()
if xs == ["junk"]:
    print("1 2 x")
elif xs == ["short"]:
    print(1)
else:
    print(" ".join(reversed(xs)))
`

func TestCheckerPermutation(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	j := judge.New(r, judge.Options{Parallel: 2})
	res := j.Execute(context.Background(), judge.ExecutionRequest{
		Code: reverser, Language: "python",
		TestCases: []judge.TestCase{
			{ID: "perm", Input: "3 1 2\n", ExpectedOutput: "1 2 3\n"},
			{ID: "junk", Input: "junk", ExpectedOutput: "1 2\n"},
			{ID: "short", Input: "short", ExpectedOutput: "1 2\n"},
		},
		Checker: &judge.Tool{Language: "cpp", Code: permChecker},
	})
	want := []judge.TestStatus{judge.TestPassed, judge.TestPresentationError, judge.TestWrongAnswer}
	if len(res.TestResults) != 3 {
		t.Fatalf("%s", describe(res))
	}
	for i, tr := range res.TestResults {
		if tr.Status != want[i] {
			t.Errorf("%s: %s, want %s\n%s", tr.TestID, tr.Status, want[i], describe(res))
		}
	}
	if m := res.TestResults[0].CheckerMessage; m == nil || *m != "ok 3 numbers" {
		t.Errorf("checker_message %v", m)
	}
	if m := res.TestResults[2].CheckerMessage; m == nil || *m != "not a permutation of the 2 numbers" {
		t.Errorf("checker_message %v", m)
	}
	if res.Status != judge.StatusSomePassed {
		t.Errorf("status %s", res.Status)
	}
}

// partialChecker gives the share of the answer's lines the output has
// right, exit 7 with the points first on stdout.
const partialChecker = `import sys
_, out, ans = sys.argv[1:4]
got = open(out).read().split("\n")
want = open(ans).read().strip().split("\n")
right = sum(1 for i, w in enumerate(want) if i < len(got) and got[i].strip() == w.strip())
if right == len(want):
    print("all", right, "lines")
    sys.exit(0)
print(right / len(want), "%d of %d lines" % (right, len(want)))
sys.exit(7)
`

func TestCheckerPartialScore(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	j := judge.New(r, judge.Options{Parallel: 2})
	res := j.Execute(context.Background(), judge.ExecutionRequest{
		Code: "import sys\nfor line in sys.stdin: print(line.strip().upper())\n", Language: "python",
		TestCases: []judge.TestCase{
			{ID: "all", Input: "a\nb\n", ExpectedOutput: "A\nB\n"},
			{ID: "half", Input: "a\nb\n", ExpectedOutput: "A\nC\n"},
			{ID: "quarter", Input: "a\nb\nc\nd\n", ExpectedOutput: "A\nx\ny\nz\n"},
		},
		Checker:  &judge.Tool{Language: "python", Code: partialChecker},
		Subtasks: []judge.Subtask{{ID: "s", Points: 100, Tests: []string{"all", "half", "quarter"}, Policy: judge.PolicySum}},
	})
	if len(res.TestResults) != 3 {
		t.Fatalf("%s", describe(res))
	}
	half, quarter := res.TestResults[1], res.TestResults[2]
	if res.TestResults[0].Status != judge.TestPassed || half.Status != judge.TestPartial || quarter.Status != judge.TestPartial {
		t.Fatalf("%s", describe(res))
	}
	if *half.Points != 0.5 || *quarter.Points != 0.25 || *half.CheckerMessage != "1 of 2 lines" {
		t.Errorf("points %v %v, message %q", *half.Points, *quarter.Points, *half.CheckerMessage)
	}
	if res.Score == nil || *res.Score != 58.333333 {
		t.Errorf("score %v\n%s", res.Score, describe(res))
	}
}

func TestCheckerThatLoops(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	j := judge.New(r, judge.Options{Parallel: 1, ToolLimits: judgeToolLimits()})
	res := j.Execute(context.Background(), judge.ExecutionRequest{
		Code: "print(1)\n", Language: "python",
		TestCases: []judge.TestCase{{ID: "t", Input: "", ExpectedOutput: "1\n"}},
		Checker:   &judge.Tool{Language: "python", Code: "while True:\n    pass\n"},
	})
	if res.Status != judge.StatusJudgeError || len(res.TestResults) != 1 ||
		res.TestResults[0].Status != judge.TestJudgeError || *res.TestResults[0].ErrorMessage != "The checker timed out" {
		t.Fatalf("%s", describe(res))
	}
}

func TestCheckerDoesNotCompile(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	res := judge.New(r, judge.Options{Parallel: 1}).Execute(context.Background(), judge.ExecutionRequest{
		Code: "print(1)\n", Language: "python",
		TestCases: []judge.TestCase{{ID: "t", ExpectedOutput: "1\n"}},
		Checker:   &judge.Tool{Language: "c", Code: "int main( {"},
	})
	if res.Status != judge.StatusJudgeError || res.ErrorInfo == nil || res.ErrorInfo.Stage != judge.StageCompilation ||
		!strings.Contains(res.ErrorInfo.Message, "The checker did not compile") {
		t.Fatalf("%s", describe(res))
	}
}

// countingSolution guesses 1, 2, 3, ...: GuessInteractor gives up after
// 10 tries.
const countingSolution = `g = 1
while True:
    print(g, flush=True)
    if input() == "=":
        break
    g += 1
`

func TestInteractiveGuessNumber(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	j := judge.New(r, judge.Options{Parallel: 2, ToolLimits: judgeToolLimits()})
	tests := []judge.TestCase{{ID: "a", Input: "1"}, {ID: "b", Input: "777"}, {ID: "c", Input: "1000"}}
	for _, c := range []struct {
		name, lang, code string
		want             judge.TestStatus
		overall          judge.ExecutionStatus
	}{
		{"bisect", "python", judgetest.BisectSolution, judge.TestPassed, judge.StatusAllPassed},
		{"bisect in C", "c", `#include <stdio.h>
int main(void) { int lo = 1, hi = 1000; char r[8];
  for (;;) { int mid = (lo + hi) / 2; printf("%d\n", mid); fflush(stdout);
    if (scanf("%7s", r) != 1 || r[0] == '=') return 0;
    if (r[0] == '<') lo = mid + 1; else hi = mid - 1; } }`, judge.TestPassed, judge.StatusAllPassed},
		{"counting", "python", countingSolution, judge.TestWrongAnswer, judge.StatusSomePassed},
		// Both wait to read: the solution's time limit ends the test.
		{"silent", "python", "input()\n", judge.TestTimeout, judge.StatusTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := j.Execute(context.Background(), judge.ExecutionRequest{
				Code: c.code, Language: c.lang, TestCases: tests, TimeoutMS: 2000,
				Interactor: &judge.Tool{Language: "python", Code: judgetest.GuessInteractor},
			})
			if len(res.TestResults) != 3 || res.Status != c.overall {
				t.Fatalf("%s", describe(res))
			}
			for i, tr := range res.TestResults {
				want := c.want
				if c.name == "counting" && i == 0 {
					want = judge.TestPassed // 1 is its first guess
				}
				if tr.Status != want {
					t.Errorf("%s: %s, want %s\n%s", tr.TestID, tr.Status, want, describe(res))
				}
			}
			msg := res.TestResults[1].CheckerMessage
			switch c.want {
			case judge.TestPassed:
				if msg == nil || !strings.HasPrefix(*msg, "found in ") {
					t.Errorf("checker_message %v", msg)
				}
			case judge.TestWrongAnswer:
				if msg == nil || *msg != "no right guess in 10 tries" {
					t.Errorf("checker_message %v", msg)
				}
			case judge.TestTimeout:
				if msg == nil || *msg != "unexpected end of input" {
					t.Errorf("checker_message %v", msg)
				}
			}
		})
	}
}

// judgeToolLimits are short limits for checkers and interactors.
func judgeToolLimits() sandbox.Limits {
	return sandbox.Limits{WallTime: 3 * time.Second, CPUTime: 2 * time.Second}
}

// snoop looks for what the solution must never reach: the checker's and
// the interactor's files (INPUT, OUTPUT, ANSWER) and the interactor's
// source, whose marker it builds at run time so that its own source does
// not hold it. It prints "sealed" when it found none of them, else what
// it found.
const snoop = `import os
marker = "SECRET" + "-OF-THE-JUDGE"
found = []
for name in ("input.txt", "answer.txt", "output.txt"):
    for d in ("/workspace", "/tmp", "/", "/opt/program"):
        if os.path.exists(os.path.join(d, name)):
            found.append(os.path.join(d, name))
for root in ("/workspace", "/tmp", "/opt", "/var", "/home", "/root", "/run"):
    for dirpath, dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            try:
                if marker.encode() in open(p, "rb").read(1 << 20):
                    found.append(p)
            except OSError:
                pass
print("sealed" if not found else "found " + " ".join(found), flush=True)
`

func TestSolutionCannotReachTheJudgesFiles(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	j := judge.New(r, judge.Options{Parallel: 1, ToolLimits: judgeToolLimits()})
	tests := []judge.TestCase{{ID: "t", Input: "SECRET-OF-THE-JUDGE input", ExpectedOutput: "SECRET-OF-THE-JUDGE answer"}}

	// A checker that accepts only "sealed", and holds the marker itself.
	checker := "import sys\n# SECRET-OF-THE-JUDGE\nout = open(sys.argv[2]).read().strip()\nprint(out)\nsys.exit(0 if out == 'sealed' else 1)\n"
	res := j.Execute(context.Background(), judge.ExecutionRequest{
		Code: snoop, Language: "python", TestCases: tests,
		Checker: &judge.Tool{Language: "python", Code: checker},
	})
	if res.Status != judge.StatusAllPassed {
		t.Errorf("checker: %s", describe(res))
	}

	// An interactor that holds the marker in its source and its INPUT.
	inter := "import sys\n# SECRET-OF-THE-JUDGE\nline = sys.stdin.readline().strip()\nsys.stderr.write(line)\nsys.exit(0 if line == 'sealed' else 1)\n"
	res = j.Execute(context.Background(), judge.ExecutionRequest{
		Code: snoop, Language: "python", TestCases: tests,
		Interactor: &judge.Tool{Language: "python", Code: inter},
	})
	if res.Status != judge.StatusAllPassed {
		t.Errorf("interactor: %s", describe(res))
	}

	// The probe works: a solution given the marker on its own stdin,
	// written to its own workspace, finds it.
	res = j.Execute(context.Background(), judge.ExecutionRequest{
		Code: "open('/workspace/input.txt', 'w').write(input())\n" + snoop, Language: "python", TestCases: tests,
		Checker: &judge.Tool{Language: "python", Code: checker},
	})
	if res.Status != judge.StatusAllFailed || !strings.Contains(deref(res.TestResults[0].CheckerMessage), "found /workspace/input.txt") {
		t.Errorf("the probe finds nothing: %s", describe(res))
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// An interactor that ends at once leaves a solution that floods its
// stdout writing into nothing: the run ends at its output cap, it does
// not hang on the pipe.
func TestInteractiveFloodAfterTheInteractorEnded(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	j := judge.New(r, judge.Options{Parallel: 1, ToolLimits: judgeToolLimits()})
	res := j.Execute(context.Background(), judge.ExecutionRequest{
		Code: "while True:\n    print('x' * 4096)\n", Language: "python",
		TestCases:  []judge.TestCase{{ID: "t", Input: "1"}},
		TimeoutMS:  5000,
		Interactor: &judge.Tool{Language: "python", Code: "import sys\nsys.exit(0)\n"},
	})
	tr := res.TestResults
	if len(tr) != 1 || tr[0].Status != judge.TestWrongAnswer || deref(tr[0].ErrorMessage) != "output limit exceeded" {
		t.Fatalf("%s", describe(res))
	}
}

// What an interactor writes to OUTPUT is bounded in the result.
func TestInteractorOutputBounded(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	j := judge.New(r, judge.Options{Parallel: 1, ToolLimits: judgeToolLimits()})
	res := j.Execute(context.Background(), judge.ExecutionRequest{
		Code: "print(1)\n", Language: "python",
		TestCases:  []judge.TestCase{{ID: "t", Input: "1"}},
		Interactor: &judge.Tool{Language: "python", Code: "import sys\nopen(sys.argv[2], 'w').write('m' * 1000000)\nsys.exit(1)\n"},
	})
	tr := res.TestResults
	if len(tr) != 1 || tr[0].Status != judge.TestWrongAnswer {
		t.Fatalf("%s", describe(res))
	}
	if n := len(deref(tr[0].CheckerMessage)); n < 1000 || n > judge.MaxCheckerMessageBytes+len("…") {
		t.Errorf("checker_message of %d bytes", n)
	}
}

// Invoke never lets an invocation's file replace the program's own
// source.
func TestInvokeKeepsTheSource(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	p, err := r.PrepareProgram(context.Background(), "python", "print('mine')\n", judge.ProgramOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	name := strings.TrimPrefix(p.Source(), sandbox.WorkspaceDir+"/")
	_, err = p.Invoke(context.Background(), judge.Invocation{
		Files:  []sandbox.File{{Path: name, Content: []byte("print('theirs')\n")}},
		Limits: sandbox.Limits{WallTime: 5 * time.Second},
	})
	if err == nil || !strings.Contains(err.Error(), "would replace the program's own") {
		t.Fatalf("got %v", err)
	}
	res, err := p.Invoke(context.Background(), judge.Invocation{
		Args:   []string{"a"},
		Files:  []sandbox.File{{Path: "other.txt", Content: []byte("x")}},
		Limits: sandbox.Limits{WallTime: 5 * time.Second},
	})
	if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout) != "mine\n" {
		t.Fatalf("%v %+v", err, res)
	}
}

// A compiled interactor runs through the same OUTPUT copy: its exit code
// passes through (2, a presentation error), and a crash stays a crash
// (judge_error), not a wrong answer.
func TestCompiledInteractor(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	j := judge.New(r, judge.Options{Parallel: 1, ToolLimits: judgeToolLimits()})
	inter := `#include <stdio.h>
#include <signal.h>
int main(int argc, char **argv) {
    FILE *in = fopen(argv[1], "r"), *out = fopen(argv[2], "w");
    int mode = 0, x = 0;
    if (!in || !out || fscanf(in, "%d", &mode) != 1) return 3;
    if (scanf("%d", &x) != 1) { fprintf(out, "no number"); return 2; }
    if (mode == 2) { fprintf(out, "read %d, then crashed", x); fflush(out); raise(SIGSEGV); }
    fprintf(out, "read %d", x);
    return x == 42 ? 0 : 1;
}`
	res := j.Execute(context.Background(), judge.ExecutionRequest{
		Code: "import sys\nprint(42 if sys.argv[-1] != 'junk' else 'junk', flush=True)\n", Language: "python",
		TestCases:  []judge.TestCase{{ID: "ok", Input: "1"}, {ID: "crash", Input: "2"}},
		Interactor: &judge.Tool{Language: "c", Code: inter},
	})
	if len(res.TestResults) != 2 {
		t.Fatalf("%s", describe(res))
	}
	ok, crash := res.TestResults[0], res.TestResults[1]
	if ok.Status != judge.TestPassed || deref(ok.CheckerMessage) != "read 42" {
		t.Errorf("ok: %s", describe(res))
	}
	// (The shell says "Segmentation fault" first.)
	if crash.Status != judge.TestJudgeError || !strings.HasSuffix(deref(crash.CheckerMessage), "read 42, then crashed") ||
		deref(crash.ErrorMessage) != "The interactor was killed by signal 11" {
		t.Errorf("crash: %s", describe(res))
	}
	res = j.Execute(context.Background(), judge.ExecutionRequest{
		Code: "print('junk')\n", Language: "python",
		TestCases:  []judge.TestCase{{ID: "pe", Input: "1"}},
		Interactor: &judge.Tool{Language: "c", Code: inter},
	})
	if len(res.TestResults) != 1 || res.TestResults[0].Status != judge.TestPresentationError || deref(res.TestResults[0].CheckerMessage) != "no number" {
		t.Errorf("pe: %s", describe(res))
	}
}
