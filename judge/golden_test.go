package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGoldenResults pins the JSON of whole results, field names, nulls and
// all, as clients see it.
func TestGoldenResults(t *testing.T) {
	tests := []struct {
		name   string
		engine *fakeEngine
		req    ExecutionRequest
	}{
		{name: "two_sum_all_passed", engine: twoSumEngine(), req: twoSumRequest()},
		{
			name: "some_passed_hidden",
			engine: newEngine(map[string]script{
				"1": prints("1\n"), "2": prints("5\n"), "3": exits(1, "3", "secret 3"), "4": prints("4"),
			}),
			req: request("python", "print(input())",
				TestCase{ID: "visible", Input: "1", ExpectedOutput: "1"},
				TestCase{ID: "visible_wrong", Input: "2", ExpectedOutput: "2"},
				TestCase{ID: "hidden_crash", Input: "3", ExpectedOutput: "3", IsHidden: true},
				TestCase{ID: "hidden_ok", Input: "4", ExpectedOutput: "4", IsHidden: true}),
		},
		{
			name:   "runtime_error",
			engine: newEngine(map[string]script{"": exits(1, "", "ZeroDivisionError: division by zero\n")}),
			req:    request("python", "x = 1/0", TestCase{ID: "t1"}),
		},
		{
			name:   "compilation_error",
			engine: &fakeEngine{prepareErr: &CompileError{Output: "solution.c:1:1: error: expected ';'", Stdout: ""}},
			req:    request("c", "int main() { return 0 }", TestCase{ID: "t1", Input: "", ExpectedOutput: ""}),
		},
		{
			name:   "validation_error",
			engine: newEngine(nil),
			req: func() ExecutionRequest {
				r := request("python", "print(1)", TestCase{ID: "t1"})
				r.MemoryLimitMB = 2048
				return r
			}(),
		},
		{
			name:   "unsupported_language",
			engine: &fakeEngine{prepareErr: errors.Join(ErrUnsupportedLanguage)},
			req:    request("brainfuck", "+.", TestCase{ID: "t1"}),
		},
		{
			name:   "total_timeout",
			engine: newEngine(map[string]script{"fast": prints("ok"), "slow": blocks, "never": prints("never")}),
			req: func() ExecutionRequest {
				r := request("python", "code",
					TestCase{ID: "fast", Input: "fast", ExpectedOutput: "ok"},
					TestCase{ID: "slow", Input: "slow", ExpectedOutput: "x"},
					TestCase{ID: "never", Input: "never", ExpectedOutput: "never"})
				r.TotalTimeoutMS = 100
				return r
			}(),
		},
		{
			name:   "sandbox_error",
			engine: newEngine(map[string]script{"a": failsWith(errors.New("sandbox setup failed: python3 not found"))}),
			req:    request("python", "code", TestCase{ID: "t1", Input: "a"}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := newJudge(tt.engine, 1).Execute(context.Background(), tt.req)
			got, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the result:\n%s", path, got)
			}
		})
	}
}
