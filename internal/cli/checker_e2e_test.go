package cli_test

import (
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
)

func TestJudgeCheckerAndInteractorEndToEnd(t *testing.T) {
	testutil.RequireRoot(t)
	tests := writeSource(t, "tests.json", `[
		{"id": "a", "input": "3 1 2\n", "expected_output": "1 2 3\n"},
		{"id": "b", "input": "7 5\n", "expected_output": "5 7\n"}
	]`)
	reverse := writeSource(t, "reverse.py", "print(' '.join(reversed(input().split())))\n")
	wrong := writeSource(t, "wrong.py", "print('1 1 1')\n")
	// Accepts any permutation of the answer.
	checker := writeSource(t, "perm.py", `import sys
_, out, ans = sys.argv[1:4]
if sorted(open(out).read().split()) == sorted(open(ans).read().split()):
    sys.exit(0)
print("not a permutation")
sys.exit(1)
`)
	checkerNoExt := writeSource(t, "perm-checker", "import sys\nsys.exit(0)\n")
	secrets := writeSource(t, "secrets.json", `[{"id": "s", "input": "42"}, {"id": "t", "input": "7"}]`)
	interactor := writeSource(t, "inter.py", `import sys
secret = int(open(sys.argv[1]).read())
for _ in range(20):
    g = int(sys.stdin.readline())
    if g == secret:
        print("=", flush=True)
        sys.exit(0)
    print("<" if g < secret else ">", flush=True)
open(sys.argv[2], "w").write("too many guesses")
sys.exit(1)
`)
	bisect := writeSource(t, "bisect.py", `lo, hi = 1, 100
while True:
    m = (lo + hi) // 2
    print(m, flush=True)
    r = input()
    if r == "=":
        break
    lo, hi = (m + 1, hi) if r == "<" else (lo, m - 1)
`)
	// Guesses 1 until the interactor gives up, then dies reading: the
	// interactor's wrong answer is the verdict.
	stubborn := writeSource(t, "stubborn.py", "while True:\n    print(1, flush=True)\n    input()\n")
	for _, tc := range []struct {
		name string
		args []string
		exit int
		want []string
	}{
		{"checker accepts", []string{"--tests", tests, "--checker", checker, reverse}, 0, []string{"all_passed"}},
		{"checker refuses", []string{"--tests", tests, "--checker", checker, wrong}, 1, []string{"wrong_answer", "not a permutation", "all_failed"}},
		{"checker language", []string{"--tests", tests, "--checker", checkerNoExt, "--checker-lang", "python", wrong}, 0, []string{"all_passed"}},
		{"checker without language", []string{"--tests", tests, "--checker", checkerNoExt, wrong}, 2, nil},
		{"checker lang alone", []string{"--tests", tests, "--checker-lang", "python", wrong}, 2, nil},
		{"both", []string{"--tests", tests, "--checker", checker, "--interactor", interactor, reverse}, 2, nil},
		{"interactor", []string{"--tests", secrets, "--interactor", interactor, bisect}, 0, []string{"all_passed"}},
		{"interactor refuses", []string{"--tests", secrets, "--interactor", interactor, stubborn}, 1, []string{"wrong_answer", "too many guesses"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", append([]string{"judge"}, tc.args...)...)
			if code != tc.exit {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tc.exit, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}
