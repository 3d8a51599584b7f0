package judgetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

// sumProgram is one language's solution of "print a + b", which fails at
// run time when a is negative, a program that does not compile, and one
// that allocates past its memory limit (both empty for interpreted
// languages).
type sumProgram struct {
	lang, code, broken, hog string
}

var sumPrograms = []sumProgram{
	{lang: "python", code: "import sys\na, b = map(int, sys.stdin.read().split())\nif a < 0:\n    raise ValueError('negative')\nprint(a + b)\n"},
	{lang: "python3", code: "a, b = map(int, input().split())\nassert a >= 0, 'negative'\nprint(a + b)\n"},
	{
		lang:   "c",
		code:   "#include <stdio.h>\n#include <stdlib.h>\nint main(void) { long a, b; if (scanf(\"%ld %ld\", &a, &b) != 2) return 1; if (a < 0) abort(); printf(\"%ld\\n\", a + b); return 0; }\n",
		broken: "int main(void) { return undeclared_name; }\n",
		hog:    "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\nint main(void) { for (int i = 0; i < 4096; i++) { char *p = malloc(1 << 20); if (!p) return 3; memset(p, 1, 1 << 20); } puts(\"done\"); return 0; }\n",
	},
	{
		lang:   "cpp",
		code:   "#include <iostream>\n#include <stdexcept>\nint main() { long a, b; std::cin >> a >> b; if (a < 0) throw std::runtime_error(\"negative\"); std::cout << a + b << '\\n'; }\n",
		broken: "int main() { std::vector<int> v; }\n",
		hog:    "#include <iostream>\n#include <vector>\nint main() { std::vector<std::vector<char>> v; for (int i = 0; i < 4096; i++) v.emplace_back(1 << 20, 1); std::cout << \"done \" << v.size() << \"\\n\"; }\n",
	},
	{
		lang:   "java",
		code:   "import java.util.Scanner;\n\npublic class Main {\n    public static void main(String[] args) {\n        Scanner in = new Scanner(System.in);\n        long a = in.nextLong(), b = in.nextLong();\n        if (a < 0) throw new IllegalArgumentException(\"negative\");\n        System.out.println(a + b);\n    }\n}\n",
		broken: "public class Main {\n    public static void main(String[] args) {\n        int x = \"not a number\";\n    }\n}\n",
		hog:    "import java.util.ArrayList;\nimport java.util.Arrays;\nimport java.util.List;\n\npublic class Main {\n    public static void main(String[] args) {\n        List<byte[]> kept = new ArrayList<>();\n        for (int i = 0; i < 4096; i++) {\n            byte[] b = new byte[1 << 20];\n            Arrays.fill(b, (byte) 1);\n            kept.add(b);\n        }\n        System.out.println(\"done \" + kept.size());\n    }\n}\n",
	},
	{lang: "javascript", code: "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nif (a < 0) throw new Error('negative');\nconsole.log(a + b);\n"},
	{
		lang:   "go",
		code:   "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tvar a, b int\n\tfmt.Scan(&a, &b)\n\tif a < 0 {\n\t\tpanic(\"negative\")\n\t}\n\tfmt.Println(a + b)\n}\n",
		broken: "package main\n\nfunc main() {\n\tundeclared()\n}\n",
		hog:    "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tvar kept [][]byte\n\tfor i := 0; i < 4096; i++ {\n\t\tb := make([]byte, 1<<20)\n\t\tfor j := range b {\n\t\t\tb[j] = 1\n\t\t}\n\t\tkept = append(kept, b)\n\t}\n\tfmt.Println(\"done\", len(kept))\n}\n",
	},
	{
		lang:   "rust",
		code:   "use std::io::Read;\n\nfn main() {\n    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut s).unwrap();\n    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n    if v[0] < 0 {\n        panic!(\"negative\");\n    }\n    println!(\"{}\", v[0] + v[1]);\n}\n",
		broken: "fn main() {\n    let x: i32 = \"not a number\";\n}\n",
		hog:    "fn main() {\n    let mut kept: Vec<Vec<u8>> = Vec::new();\n    for _ in 0..4096 {\n        kept.push(std::hint::black_box(vec![1u8; 1 << 20]));\n    }\n    println!(\"done {}\", kept.len());\n}\n",
	},
	{lang: "bash", code: "read a b\nif (( a < 0 )); then echo negative >&2; exit 3; fi\necho $((a + b))\n"},
}

// sumTests are judged against every language's program: two accepted, a
// wrong answer (the expected output is wrong) and a runtime error.
var sumTests = []judge.TestCase{
	{ID: "small", Input: "1 2\n", ExpectedOutput: "3\n"},
	{ID: "large", Input: "40000000000 2\n", ExpectedOutput: "40000000002\n"},
	{ID: "wrong", Input: "2 2\n", ExpectedOutput: "5\n"},
	{ID: "runtime", Input: "-1 5\n", ExpectedOutput: "4\n"},
}

var sumWant = map[string]judge.TestStatus{
	"small": judge.TestPassed, "large": judge.TestPassed,
	"wrong": judge.TestWrongAnswer, "runtime": judge.TestRuntimeError,
}

// hogLimitMB is the memory limit the hogs are judged under, far below the
// compile step's: a hog's verdict is memory_exceeded, never a compilation
// error.
const hogLimitMB = 64

// totalMS bounds each request: the most a judge allows, since the first Go
// compile builds the standard library's cache (minutes on a loaded
// machine).
const totalMS = judge.MaxTotalTimeoutMS

// Languages judges a program in every language of tbl through runner and
// judge on backend: accepted, wrong answer and runtime error in one
// request; for compiled languages a compilation error, and a program that
// allocates past its memory limit, which must be memory_exceeded (the
// compile step has limits of its own, which the run's never borrow).
// require, when not nil, skips (or fails under CI) a language the backend
// cannot run here (docker: its image is missing). It checks that the
// recipes' commands run unchanged on the backend.
func Languages(t *testing.T, backend sandbox.Backend, tbl *lang.Table, require func(t *testing.T, l *lang.Language)) {
	t.Helper()
	covered := map[string]bool{}
	for _, p := range sumPrograms {
		covered[p.lang] = true
	}
	for _, l := range tbl.All() {
		if !covered[l.ID] {
			t.Errorf("language %s has no program in sumPrograms", l.ID)
		}
	}
	j := NewJudge(t, backend, tbl)

	for _, p := range sumPrograms {
		t.Run(p.lang, func(t *testing.T) {
			l, err := tbl.Lookup(p.lang)
			if err != nil {
				t.Fatal(err)
			}
			if require != nil {
				require(t, l)
			}
			// The runner discovers the toolchain on the host for its
			// version and paths, even when an image runs it.
			tc := l.Discover(context.Background())
			testutil.Require(t, tc.Available, "needs the "+p.lang+" toolchain on the host: "+tc.Reason)

			res := j.Execute(context.Background(), judge.ExecutionRequest{
				RequestID: p.lang, Language: p.lang, Code: p.code, TestCases: sumTests,
				TimeoutMS: 10000, TotalTimeoutMS: totalMS, MemoryLimitMB: 256,
			})
			if len(res.TestResults) != len(sumTests) {
				t.Fatalf("%d results for %d tests: %s", len(res.TestResults), len(sumTests), Describe(res))
			}
			for _, tr := range res.TestResults {
				if tr.Status != sumWant[tr.TestID] {
					t.Errorf("test %s: %s, want %s\n%s", tr.TestID, tr.Status, sumWant[tr.TestID], Describe(res))
				}
			}
			if res.Status != judge.StatusSomePassed {
				t.Errorf("status %s, want %s", res.Status, judge.StatusSomePassed)
			}
			if !l.Compiled {
				return
			}
			if p.broken == "" || p.hog == "" {
				t.Fatalf("%s is compiled but has no program that does not compile or no memory hog", p.lang)
			}
			res = j.Execute(context.Background(), judge.ExecutionRequest{
				RequestID: p.lang + "-broken", Language: p.lang, Code: p.broken,
				TestCases: []judge.TestCase{{Input: "", ExpectedOutput: ""}}, TotalTimeoutMS: totalMS,
			})
			if res.Status != judge.StatusCompilationError || res.CompilationOutput == nil || strings.TrimSpace(*res.CompilationOutput) == "" {
				t.Errorf("broken program: %s, want %s with the compiler's output", Describe(res), judge.StatusCompilationError)
			}
			res = j.Execute(context.Background(), judge.ExecutionRequest{
				RequestID: p.lang + "-hog", Language: p.lang, Code: p.hog,
				TestCases: []judge.TestCase{{ID: "hog", Input: "", ExpectedOutput: "done"}},
				// The hog must reach its limit before its time runs out,
				// even on a loaded machine.
				TimeoutMS: 20000, TotalTimeoutMS: totalMS, MemoryLimitMB: hogLimitMB,
			})
			if res.Status != judge.StatusMemoryExceeded || len(res.TestResults) != 1 || res.TestResults[0].Status != judge.TestMemoryExceeded {
				t.Errorf("memory hog under %d MB: %s, want %s", hogLimitMB, Describe(res), judge.StatusMemoryExceeded)
			}
		})
	}
}

// Describe shows a judge result for a failure message: the status, the
// error, the compiler's output and each test's verdict.
func Describe(res judge.ExecutionResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", res.Status, res.Summary)
	if res.ErrorInfo != nil {
		fmt.Fprintf(&b, " error %s: %s", res.ErrorInfo.Code, res.ErrorInfo.Message)
		if res.ErrorInfo.Details != nil {
			fmt.Fprintf(&b, " (%.300s)", *res.ErrorInfo.Details)
		}
	}
	if res.CompilationOutput != nil {
		fmt.Fprintf(&b, "\n  compiler: %.500s", *res.CompilationOutput)
	}
	for _, tr := range res.TestResults {
		msg := ""
		if tr.ErrorMessage != nil {
			msg = *tr.ErrorMessage
		}
		fmt.Fprintf(&b, "\n  %s %s %dms %dKB %q %.300s", tr.TestID, tr.Status, tr.ExecutionTimeMS, tr.MemoryUsedKB, tr.ActualOutput, msg)
	}
	return b.String()
}
