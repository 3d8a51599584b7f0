package judgetest

import (
	"context"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/judge"
)

// permChecker accepts any permutation of the answer's words, says why
// not otherwise, and gives half the points to an output that has half of
// them right in place.
const permChecker = `import sys
_, out, ans = sys.argv[1:4]
got, want = open(out).read().split(), open(ans).read().split()
if sorted(got) == sorted(want):
    print("a permutation")
    sys.exit(0)
if len(got) == len(want) and 2 * sum(a == b for a, b in zip(got, want)) == len(want):
    print(0.5, "half of them")
    sys.exit(7)
print("not a permutation")
sys.exit(1)
`

// GuessInteractor plays "guess the number" as an interactor: the secret
// is in INPUT; it answers each guess with <, > or = and accepts a right
// guess within 10 tries. It writes its account to OUTPUT a line at a
// time: "found in N guesses", "no right guess in 10 tries", or
// "unexpected end of input" when the solution stops talking.
const GuessInteractor = `import sys
secret = int(open(sys.argv[1]).read())
log = open(sys.argv[2], "w", buffering=1)
for n in range(1, 11):
    line = sys.stdin.readline()
    if not line:
        log.write("unexpected end of input\n")
        sys.exit(1)
    g = int(line)
    if g == secret:
        print("=", flush=True)
        log.write("found in %d guesses\n" % n)
        sys.exit(0)
    print("<" if g < secret else ">", flush=True)
log.write("no right guess in 10 tries\n")
sys.exit(1)
`

// BisectSolution finds GuessInteractor's secret in 1..1000 by binary
// search, within its 10 tries.
const BisectSolution = `lo, hi = 1, 1000
while True:
    mid = (lo + hi) // 2
    print(mid, flush=True)
    r = input()
    if r == "=":
        break
    if r == "<":
        lo = mid + 1
    else:
        hi = mid - 1
`

// checkerAndInteractor judges with a Python checker (accepted, partial,
// wrong answer) and a Python interactor (accepted; a silent solution
// times out) on the backend: the checker's files and the pipes between
// two sandboxes work there.
func checkerAndInteractor(t *testing.T, j *judge.Judge) {
	res := j.Execute(context.Background(), judge.ExecutionRequest{
		RequestID: "checker", Language: "python", Code: "print(*reversed(input().split()))\n",
		TestCases: []judge.TestCase{
			{ID: "perm", Input: "a b c", ExpectedOutput: "a b c"},
			{ID: "half", Input: "a b c d", ExpectedOutput: "d c x y"},
			{ID: "wrong", Input: "a b c", ExpectedOutput: "a b d"},
		},
		Checker: &judge.Tool{Language: "python", Code: permChecker},
	})
	want := []judge.TestStatus{judge.TestPassed, judge.TestPartial, judge.TestWrongAnswer}
	if len(res.TestResults) != 3 {
		t.Fatalf("checker: %s", Describe(res))
	}
	for i, tr := range res.TestResults {
		if tr.Status != want[i] {
			t.Errorf("checker, test %s: %s, want %s (%s)", tr.TestID, tr.Status, want[i], Describe(res))
		}
	}
	if m := res.TestResults[1].CheckerMessage; m == nil || *m != "half of them" || *res.TestResults[1].Points != 0.5 {
		t.Errorf("partial: %s", Describe(res))
	}

	for _, c := range []struct {
		code string
		want judge.TestStatus
		msg  string
	}{
		{BisectSolution, judge.TestPassed, "found in "},
		{"input()\n", judge.TestTimeout, "unexpected end of input"},
	} {
		res := j.Execute(context.Background(), judge.ExecutionRequest{
			RequestID: "interactor", Language: "python", Code: c.code, TimeoutMS: 2000,
			TestCases:  []judge.TestCase{{ID: "s", Input: "777"}},
			Interactor: &judge.Tool{Language: "python", Code: GuessInteractor},
		})
		if len(res.TestResults) != 1 || res.TestResults[0].Status != c.want ||
			res.TestResults[0].CheckerMessage == nil || !strings.HasPrefix(*res.TestResults[0].CheckerMessage, c.msg) {
			t.Errorf("interactor, want %s %q: %s", c.want, c.msg, Describe(res))
		}
	}
}
