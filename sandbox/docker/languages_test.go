package docker_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/sandbox/docker"
	"github.com/coderunner/coderunner/sandbox/internal/judgetest"
)

// imagesConfig is the configuration that points the docker backend at the
// images scripts/build-images.sh makes; the test reads it rather than a
// copy, so that what the README tells users to run is what is tested.
const imagesConfig = "../../scripts/docker-images.yaml"

// sumProgram is one language's solution of "print a + b", which fails at
// run time when a is negative, and a program that does not compile (empty
// for interpreted languages).
type sumProgram struct {
	lang, code, broken string
}

var sumPrograms = []sumProgram{
	{lang: "python", code: "import sys\na, b = map(int, sys.stdin.read().split())\nif a < 0:\n    raise ValueError('negative')\nprint(a + b)\n"},
	{lang: "python3", code: "a, b = map(int, input().split())\nassert a >= 0, 'negative'\nprint(a + b)\n"},
	{
		lang:   "c",
		code:   "#include <stdio.h>\n#include <stdlib.h>\nint main(void) { long a, b; if (scanf(\"%ld %ld\", &a, &b) != 2) return 1; if (a < 0) abort(); printf(\"%ld\\n\", a + b); return 0; }\n",
		broken: "int main(void) { return undeclared_name; }\n",
	},
	{
		lang:   "cpp",
		code:   "#include <iostream>\n#include <stdexcept>\nint main() { long a, b; std::cin >> a >> b; if (a < 0) throw std::runtime_error(\"negative\"); std::cout << a + b << '\\n'; }\n",
		broken: "int main() { std::vector<int> v; }\n",
	},
	{
		lang:   "java",
		code:   "import java.util.Scanner;\n\npublic class Main {\n    public static void main(String[] args) {\n        Scanner in = new Scanner(System.in);\n        long a = in.nextLong(), b = in.nextLong();\n        if (a < 0) throw new IllegalArgumentException(\"negative\");\n        System.out.println(a + b);\n    }\n}\n",
		broken: "public class Main {\n    public static void main(String[] args) {\n        int x = \"not a number\";\n    }\n}\n",
	},
	{lang: "javascript", code: "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nif (a < 0) throw new Error('negative');\nconsole.log(a + b);\n"},
	{
		lang:   "go",
		code:   "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tvar a, b int\n\tfmt.Scan(&a, &b)\n\tif a < 0 {\n\t\tpanic(\"negative\")\n\t}\n\tfmt.Println(a + b)\n}\n",
		broken: "package main\n\nfunc main() {\n\tundeclared()\n}\n",
	},
	{
		lang:   "rust",
		code:   "use std::io::Read;\n\nfn main() {\n    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut s).unwrap();\n    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n    if v[0] < 0 {\n        panic!(\"negative\");\n    }\n    println!(\"{}\", v[0] + v[1]);\n}\n",
		broken: "fn main() {\n    let x: i32 = \"not a number\";\n}\n",
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

// TestLanguages judges a program in every language of the table through
// runner and judge on the docker backend, each in the image
// scripts/docker-images.yaml gives it: accepted, wrong answer and runtime
// error in one request, and a compilation error for compiled languages.
// It checks that the recipes' commands run unchanged in the local images.
func TestLanguages(t *testing.T) {
	requireDocker(t)
	cfg, err := config.Load(imagesConfig, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cfg.LanguageTable()
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, p := range sumPrograms {
		covered[p.lang] = true
	}
	for _, l := range tbl.All() {
		if !covered[l.ID] {
			t.Errorf("language %s has no program in sumPrograms", l.ID)
		}
	}
	b, err := docker.New(docker.Options{Languages: tbl, PullPolicy: cfg.Docker.PullPolicy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	j := judgetest.NewJudge(t, b, tbl)

	for _, p := range sumPrograms {
		t.Run(p.lang, func(t *testing.T) {
			l, err := tbl.Lookup(p.lang)
			if err != nil {
				t.Fatal(err)
			}
			requireImage(t, l.Image)
			// The runner discovers the toolchain on the host for its
			// version and paths, even when the image runs it.
			tc := l.Discover(context.Background())
			testutil.Require(t, tc.Available, "needs the "+p.lang+" toolchain on the host: "+tc.Reason)

			res := j.Execute(context.Background(), judge.ExecutionRequest{
				RequestID: p.lang, Language: p.lang, Code: p.code, TestCases: sumTests,
				TimeoutMS: 10000, TotalTimeoutMS: 120000, MemoryLimitMB: 256,
			})
			if len(res.TestResults) != len(sumTests) {
				t.Fatalf("%d results for %d tests: %s", len(res.TestResults), len(sumTests), describe(res))
			}
			for _, tr := range res.TestResults {
				if tr.Status != sumWant[tr.TestID] {
					t.Errorf("test %s: %s, want %s\n%s", tr.TestID, tr.Status, sumWant[tr.TestID], describe(res))
				}
			}
			if res.Status != judge.StatusSomePassed {
				t.Errorf("status %s, want %s", res.Status, judge.StatusSomePassed)
			}
			if p.broken == "" {
				if l.Compiled {
					t.Errorf("%s is compiled but has no program that does not compile", p.lang)
				}
				return
			}
			res = j.Execute(context.Background(), judge.ExecutionRequest{
				RequestID: p.lang + "-broken", Language: p.lang, Code: p.broken,
				TestCases: []judge.TestCase{{Input: "", ExpectedOutput: ""}},
			})
			if res.Status != judge.StatusCompilationError || res.CompilationOutput == nil || strings.TrimSpace(*res.CompilationOutput) == "" {
				t.Errorf("broken program: %s, want %s with the compiler's output", describe(res), judge.StatusCompilationError)
			}
		})
	}
}

// requireImage needs image in the local engine.
func requireImage(t testing.TB, image string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := exec.CommandContext(ctx, "docker", "image", "inspect", image).Run()
	testutil.Require(t, err == nil, "needs the image "+image+" (scripts/build-images.sh all)")
}

// describe shows a judge result for a failure message.
func describe(res judge.ExecutionResult) string {
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
		fmt.Fprintf(&b, "\n  %s %s %dms %q %.300s", tr.TestID, tr.Status, tr.ExecutionTimeMS, tr.ActualOutput, msg)
	}
	return b.String()
}
