package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/cli"
	"github.com/coderunner/coderunner/internal/testutil"

	_ "github.com/coderunner/coderunner/sandbox/native"
)

// These tests run the command line end to end on the native backend.

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &cli.App{
		Stdin:     strings.NewReader(stdin),
		Stdout:    &out,
		Stderr:    &errb,
		LookupEnv: func(string) (string, bool) { return "", false },
	}
	code = a.Run(context.Background(), args)
	return code, out.String(), errb.String()
}

func writeSource(t *testing.T, name, code string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(code), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNativeEndToEnd(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tc := range []struct {
		name       string
		file, code string
		args       []string
		stdin      string
		exit       int
		stdout     string
		stderrHas  string
	}{
		{name: "python", file: "hello.py", code: "print('Hello, World!')\n", stdout: "Hello, World!\n"},
		{name: "python exit code", file: "x.py", code: "import sys; sys.exit(7)\n", exit: 7},
		{name: "javascript from stdin", file: "-", args: []string{"--lang", "js"}, stdin: "console.log(6*7)\n", stdout: "42\n"},
		{name: "bash", file: "s.sh", code: "echo \"$((2+3))\"\n", stdout: "5\n"},
		{name: "C with stdin", file: "add.c", code: "#include <stdio.h>\nint main(){int a,b;scanf(\"%d %d\",&a,&b);printf(\"%d\\n\",a+b);}\n", stdin: "2 40\n", args: []string{"--stdin", "STDIN"}, stdout: "42\n"},
		{name: "C compile error", file: "bad.c", code: "int main(){ return x; }\n", exit: 1, stderrHas: "undeclared"},
		{name: "timeout", file: "slow.py", code: "import time\ntime.sleep(30)\n", args: []string{"--timeout", "1"}, exit: 124, stderrHas: "timed out"},
		{name: "memory", file: "mem.py", code: "b = bytearray(400 << 20)\n", args: []string{"--memory", "64"}, exit: 137, stderrHas: "Memory limit"},
		{name: "unknown language", file: "x.zz", code: "x", exit: 2, stderrHas: "python"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"run"}
			for _, a := range tc.args {
				if a == "STDIN" {
					a = writeSource(t, "in.txt", tc.stdin)
				}
				args = append(args, a)
			}
			// The code comes from stdin for "-"; otherwise tc.stdin, if
			// any, is given to the program through --stdin.
			stdin := ""
			if tc.file == "-" {
				args = append(args, "-")
				stdin = tc.stdin
			} else {
				args = append(args, writeSource(t, tc.file, tc.code))
			}
			code, stdout, stderr := runCLI(t, stdin, args...)
			if code != tc.exit {
				t.Fatalf("exit %d, want %d\nstdout %q\nstderr %q", code, tc.exit, stdout, stderr)
			}
			if tc.stdout != "" && stdout != tc.stdout {
				t.Errorf("stdout %q, want %q", stdout, tc.stdout)
			}
			if tc.stderrHas != "" && !strings.Contains(stderr, tc.stderrHas) {
				t.Errorf("stderr %q lacks %q", stderr, tc.stderrHas)
			}
		})
	}
}

func TestNativeEndToEndJSON(t *testing.T) {
	testutil.RequireRoot(t)
	code, stdout, stderr := runCLI(t, "", "run", "--json", writeSource(t, "w.py", "open('out.csv','w').write('a,b\\n'); print('done')\n"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	for _, key := range []string{"stdout", "stderr", "exit_code", "execution_time", "status", "error_message",
		"resource_usage", "limits_applied", "language", "backend", "session_id", "truncated"} {
		if _, ok := res[key]; !ok {
			t.Errorf("result lacks %q", key)
		}
	}
	if res["status"] != "success" || res["backend"] != "native" || res["stdout"] != "done\n" {
		t.Errorf("unexpected result: %s", stdout)
	}
	arts, _ := res["artifacts"].([]any)
	if len(arts) != 1 || arts[0].(map[string]any)["path"] != "out.csv" {
		t.Errorf("artifacts %v, want out.csv", res["artifacts"])
	}
}

func TestDoctorNative(t *testing.T) {
	testutil.RequireRoot(t)
	code, stdout, stderr := runCLI(t, "", "doctor", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"native", "namespaces", "cgroup", "seccomp", "python"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("doctor --json lacks %q", want)
		}
	}
}

// multiFileDir is a C program of two files that adds its two numbers.
func multiFileDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, code := range map[string]string{
		"main.c":    "#include <stdio.h>\nint add(int, int);\nint main(){int a,b;scanf(\"%d %d\",&a,&b);printf(\"%d\\n\",add(a,b));}\n",
		"lib/add.c": "int add(int a, int b) { return a + b; }\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(code), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRunDirectoryEndToEnd(t *testing.T) {
	testutil.RequireRoot(t)
	code, stdout, stderr := runCLI(t, "", "run", "--stdin", writeSource(t, "in", "20 22\n"), multiFileDir(t))
	if code != 0 || stdout != "42\n" {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}

func TestJudgeEndToEnd(t *testing.T) {
	testutil.RequireRoot(t)
	tests := writeSource(t, "tests.json", `[
		{"id": "a", "input": "1 2\n", "expected_output": "3\n"},
		{"id": "b", "input": "5 5", "expected": "10"},
		{"id": "secret", "input": "2 2", "expected_output": "4", "is_hidden": true}
	]`)
	sum := writeSource(t, "sum.py", "a, b = map(int, input().split())\nprint(a + b)\n")
	wrong := writeSource(t, "wrong.py", "print(0)\n")
	bad := writeSource(t, "bad.c", "int main(){ return x; }\n")
	csum := writeSource(t, "sum.c", "#include <stdio.h>\nint main(){int a,b;scanf(\"%d %d\",&a,&b);printf(\"%d\\n\",a+b);}\n")
	small := writeSource(t, "small.py", "a, b = map(int, input().split())\nprint(a + b if a + b < 5 else 0)\n")
	subtasks := writeSource(t, "subtasks.json", `[
		{"id": "small", "points": 30, "tests": ["a"]},
		{"id": "large", "points": 70, "tests": ["b", "secret"], "policy": "sum"}
	]`)
	badSubtasks := writeSource(t, "bad-subtasks.json", `[{"id": "s", "points": 1, "tests": ["a"], "weight": 2}]`)
	for _, tc := range []struct {
		name string
		args []string
		exit int
		want []string
	}{
		{"all passed", []string{"--tests", tests, sum}, 0, []string{"all_passed", "secret"}},
		{"all passed C", []string{"--tests", tests, "--parallel", "1", csum}, 0, []string{"all_passed"}},
		{"wrong answer", []string{"--tests", tests, wrong}, 1, []string{"wrong_answer", "all_failed"}},
		{"compile error", []string{"--tests", tests, bad}, 1, []string{"compilation failed", "undeclared"}},
		{"refused request", []string{"--tests", tests, "--memory", "4096", sum}, 2, nil},
		{"bad compare", []string{"--tests", tests, "--compare", "fuzzy", sum}, 2, nil},
		{"no tests flag", []string{sum}, 2, nil},
		{"subtasks", []string{"--tests", tests, "--subtasks", subtasks, small}, 1, []string{"SUBTASK", "small", "30/30", "large", "35/70", "score 65/100"}},
		{"subtask unknown field", []string{"--tests", tests, "--subtasks", badSubtasks, sum}, 2, nil},
		{"directory", []string{"--tests", tests, "--parallel", "1", multiFileDir(t)}, 0, []string{"all_passed"}},
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

	code, stdout, stderr := runCLI(t, "", "judge", "--json", "--tests", tests, sum)
	if code != 0 {
		t.Fatalf("judge --json exit %d: %s", code, stderr)
	}
	var res struct {
		Status      string `json:"status"`
		TestResults []struct {
			TestID         string `json:"test_id"`
			Status         string `json:"status"`
			ActualOutput   string `json:"actual_output"`
			ExpectedOutput string `json:"expected_output"`
		} `json:"test_results"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if res.Status != "all_passed" || len(res.TestResults) != 3 {
		t.Fatalf("result %+v", res)
	}
	if h := res.TestResults[2]; h.ActualOutput != "" || h.ExpectedOutput != "" {
		t.Errorf("hidden test echoed: %+v", h)
	}

	code, stdout, _ = runCLI(t, "", "judge", "--json", "--tests", tests, "--timeout-ms", "5", sum)
	if code != 2 || !strings.Contains(stdout, "VALIDATION_ERROR") {
		t.Errorf("refused request: exit %d, output %s", code, stdout)
	}
}
