package runner_test

import (
	"context"
	"errors"
	"testing"

	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/multifile"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
)

// TestJudgeMultiFile judges solutions of several files through the
// compile cache: each compiled language builds every file, a file other
// than the entry is part of the cache key, and the files are in each
// test's workspace.
func TestJudgeMultiFile(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	j := judge.New(r, judge.Options{Parallel: 2})
	tests := []judge.TestCase{{ID: "t", Input: "3\n", ExpectedOutput: "6\n"}}
	cases := []struct {
		name, language, code, entry string
		files                       []multifile.File
	}{
		{
			name: "c", language: "c",
			code:  "#include <stdio.h>\nint twice(int);\nint main(void) { int n; scanf(\"%d\", &n); printf(\"%d\\n\", twice(n)); }\n",
			files: []multifile.File{{Path: "lib/twice.c", Content: "int twice(int n) { return 2 * n; }\n"}},
		},
		{
			name: "java", language: "java", entry: "Main.java",
			files: []multifile.File{
				{Path: "Main.java", Content: "public class Main { public static void main(String[] a) { System.out.println(Twice.of(new java.util.Scanner(System.in).nextInt())); } }\n"},
				{Path: "Twice.java", Content: "class Twice { static int of(int n) { return 2 * n; } }\n"},
			},
		},
		{
			name: "go module", language: "go",
			code: "package main\n\nimport (\n\t\"fmt\"\n\n\t\"m/twice\"\n)\n\nfunc main() { var n int; fmt.Scan(&n); fmt.Println(twice.Of(n)) }\n",
			files: []multifile.File{
				{Path: "go.mod", Content: "module m\n\ngo 1.19\n"},
				{Path: "twice/twice.go", Content: "package twice\n\nfunc Of(n int) int { return 2 * n }\n"},
			},
		},
		{
			name: "rust", language: "rust",
			code:  "mod twice;\nfn main() { let mut s = String::new(); std::io::stdin().read_line(&mut s).unwrap(); println!(\"{}\", twice::of(s.trim().parse().unwrap())); }\n",
			files: []multifile.File{{Path: "twice.rs", Content: "pub fn of(n: i64) -> i64 { 2 * n }\n"}},
		},
		{
			name: "python reading a data file", language: "python",
			code:  "print(int(input()) * int(open('factor.txt').read()))\n",
			files: []multifile.File{{Path: "factor.txt", Content: "2"}},
		},
		{
			name: "c reading a data file", language: "c",
			code:  "#include <stdio.h>\nint main(void) { int n, f; scanf(\"%d\", &n); FILE *x = fopen(\"factor.txt\", \"r\"); fscanf(x, \"%d\", &f); printf(\"%d\\n\", n * f); }\n",
			files: []multifile.File{{Path: "factor.txt", Content: "2"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := j.Execute(context.Background(), judge.ExecutionRequest{
				Language: c.language, Code: c.code, Files: c.files, Entry: c.entry, TestCases: tests,
				TimeoutMS: 10000, TotalTimeoutMS: 60000, MemoryLimitMB: 512,
			})
			if res.Status != judge.StatusAllPassed {
				t.Fatalf("%s", describe(res))
			}
		})
	}

	// The same entry with another helper is another program.
	prog := func(helper string) string {
		res := j.Execute(context.Background(), judge.ExecutionRequest{
			Language: "c", Code: "#include <stdio.h>\nint f(void);\nint main(void) { printf(\"%d\\n\", f()); }\n",
			Files:     []multifile.File{{Path: "f.c", Content: "int f(void) { return " + helper + "; }\n"}},
			TestCases: []judge.TestCase{{ID: "t", ExpectedOutput: helper + "\n"}},
		})
		return string(res.Status)
	}
	if got := prog("1"); got != string(judge.StatusAllPassed) {
		t.Fatalf("first helper: %s", got)
	}
	if got := prog("2"); got != string(judge.StatusAllPassed) {
		t.Fatalf("a changed helper took the cached program of the first: %s", got)
	}
}

// TestPrepareRefusesFiles: files that do not fit the language are the
// request's fault, and the judge says so as a validation error.
func TestPrepareRefusesFiles(t *testing.T) {
	r, be := newRunner(t, runner.Options{})
	_, err := r.Prepare(context.Background(), "c", "int main;", judge.ProgramOptions{
		Files: []sandbox.File{{Path: "main", Content: []byte("x")}},
	})
	if !errors.Is(err, multifile.ErrInvalid) {
		t.Fatalf("error %v", err)
	}
	if n := be.runs.Load(); n != 0 {
		t.Errorf("%d sandbox runs for a refused program", n)
	}
	j := judge.New(r, judge.Options{})
	res := j.Execute(context.Background(), judge.ExecutionRequest{
		Language: "c", Code: "int main;", TestCases: []judge.TestCase{{ExpectedOutput: ""}},
		Files: []multifile.File{{Path: "../x.c", Content: "x"}},
	})
	if res.Status != judge.StatusSandboxError || res.ErrorInfo == nil || res.ErrorInfo.Code != judge.CodeValidationError {
		t.Fatalf("%s", describe(res))
	}
	res = j.Execute(context.Background(), judge.ExecutionRequest{
		Language: "java", Files: []multifile.File{{Path: "Main.java", Content: "class Main {}"}, {Path: "Util.h", Content: ""}},
		Entry: "Util.h", TestCases: []judge.TestCase{{ExpectedOutput: ""}},
	})
	if res.Status != judge.StatusSandboxError || res.ErrorInfo == nil || res.ErrorInfo.Code != judge.CodeValidationError {
		t.Fatalf("%s", describe(res))
	}
}
