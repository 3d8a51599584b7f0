package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
)

// TestJudgeOutputBoundsConfigured: coderunner judge takes the bounds on
// outputs from the configuration: what each test keeps, what the result
// keeps in all, and the ceiling of the output cap.
func TestJudgeOutputBoundsConfigured(t *testing.T) {
	testutil.RequireRoot(t)
	cfg := writeSource(t, "config.yaml", "limits:\n  kept_output_kb: 1\n  kept_output_total_kb: 2\n  max_output_ceiling_kb: 64\n")
	big := strings.Repeat("a", 10000)
	tests := writeSource(t, "tests.json", fmt.Sprintf(`[
		{"id": "t1", "input": "", "expected_output": %[1]q},
		{"id": "t2", "input": "", "expected_output": %[1]q},
		{"id": "t3", "input": "", "expected_output": %[1]q}
	]`, big))
	prog := writeSource(t, "big.py", "print('a' * 10000)\n")
	code, stdout, stderr := runCLI(t, "", "judge", "--json", "--config", cfg, "--parallel", "1", "--tests", tests, prog)
	if code != 0 {
		t.Fatalf("exit %d\nstdout %.2000s\nstderr %s", code, stdout, stderr)
	}
	var res struct {
		TestResults []struct {
			ActualOutput string `json:"actual_output"`
			Truncated    bool   `json:"truncated"`
		} `json:"test_results"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.TestResults) != 3 {
		t.Fatalf("result %v: %.2000s", err, stdout)
	}
	for i, want := range []int{1024, 1024, 0} {
		if tr := res.TestResults[i]; len(tr.ActualOutput) != want || !tr.Truncated {
			t.Errorf("test %d keeps %d bytes (truncated %v), want %d and truncated", i+1, len(tr.ActualOutput), tr.Truncated, want)
		}
	}

	over := writeSource(t, "over.json", fmt.Sprintf(`[{"id": "big", "input": "", "expected_output": %q}]`, strings.Repeat("a", 64<<10+1)))
	code, stdout, _ = runCLI(t, "", "judge", "--json", "--config", cfg, "--tests", over, prog)
	if code != 2 || !strings.Contains(stdout, "VALIDATION_ERROR") || !strings.Contains(stdout, "the output cap") {
		t.Errorf("an expected output over the ceiling: exit %d, output %.500s", code, stdout)
	}
}
