package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestFleetIntegration is the Fleet round trip against the fake engine: artifact → request → result → artifact.
func TestFleetIntegration(t *testing.T) {
	artifact := Artifact{
		ArtifactType:  "code",
		InlineContent: "print(sum(map(int, input().split())))",
		Metadata:      map[string]any{"language": "python"},
	}
	testCases := []map[string]any{
		{"id": "t1", "input": "1 2 3", "expected": "6"},
		{"id": "t2", "input": "10 20", "expected": "30"},
	}
	req, err := ArtifactToExecutionRequest(artifact, testCases, FleetRequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(map[string]script{"1 2 3": prints("6\n"), "10 20": prints("30\n")})
	result := newJudge(e, 2).Execute(context.Background(), req)
	resultArtifact, largeContent := ExecutionResultToArtifact(result, "")

	if result.Status != StatusAllPassed {
		t.Errorf("status = %s (%s)", result.Status, result.Summary)
	}
	if resultArtifact.ArtifactType != "test_result" {
		t.Errorf("artifact_type = %q", resultArtifact.ArtifactType)
	}
	if resultArtifact.Metadata["passed"] != 2 || resultArtifact.Metadata["total"] != 2 || resultArtifact.Metadata["status"] != "all_passed" {
		t.Errorf("metadata = %v", resultArtifact.Metadata)
	}
	if largeContent != "" || resultArtifact.ContentRef != "" {
		t.Errorf("small result not inline: ref %q, large %d bytes", resultArtifact.ContentRef, len(largeContent))
	}
	if e.langs[0] != "python" || e.codes[0] != artifact.InlineContent {
		t.Errorf("engine got %q %q", e.langs[0], e.codes[0])
	}
}

func TestArtifactToExecutionRequest(t *testing.T) {
	code := Artifact{ArtifactType: "code", InlineContent: "x", Metadata: map[string]any{"language": " Python3 "}}
	req, err := ArtifactToExecutionRequest(code, []map[string]any{
		{"input": "a", "expected_output": "A"},
		{"id": "named", "expected": "B", "expected_output": "ignored", "hidden": true, "description": "d"},
		{"is_hidden": true},
	}, FleetRequestOptions{RequestID: "rid", TimeoutMS: 700})
	if err != nil {
		t.Fatal(err)
	}
	want := ExecutionRequest{
		RequestID: "rid", Code: "x", Language: "python3",
		TestCases: []TestCase{
			{ID: "test_0", Input: "a", ExpectedOutput: "A"},
			{ID: "named", ExpectedOutput: "B", IsHidden: true, Description: "d"},
			{ID: "test_2", IsHidden: true},
		},
		TimeoutMS: 700, TotalTimeoutMS: 60000, MemoryLimitMB: 256, CPULimit: 1.0,
		Metadata: map[string]any{},
	}
	if !reflect.DeepEqual(req, want) {
		t.Errorf("request =\n%+v\nwant\n%+v", req, want)
	}

	// Defaults: python, a fresh UUID per request.
	a, err := ArtifactToExecutionRequest(Artifact{InlineContent: "x"}, nil, FleetRequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ArtifactToExecutionRequest(Artifact{InlineContent: "x"}, nil, FleetRequestOptions{})
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if a.Language != "python" || !uuid.MatchString(a.RequestID) || a.RequestID == b.RequestID {
		t.Errorf("defaults: language %q, request ids %q %q", a.Language, a.RequestID, b.RequestID)
	}
	if a.TimeoutMS != 5000 || a.TotalTimeoutMS != 60000 {
		t.Errorf("default timeouts = %d, %d", a.TimeoutMS, a.TotalTimeoutMS)
	}

	// A language the table may not know is passed through, lower-cased.
	c, _ := ArtifactToExecutionRequest(Artifact{InlineContent: "x", Metadata: map[string]any{"language": "COBOL"}}, nil, FleetRequestOptions{})
	if c.Language != "cobol" {
		t.Errorf("language = %q, want cobol", c.Language)
	}
}

func TestArtifactToExecutionRequestErrors(t *testing.T) {
	tests := []struct {
		name    string
		a       Artifact
		tcs     []map[string]any
		want    string
		wantErr error
	}{
		{name: "unresolved reference", a: Artifact{ContentRef: "beads:code/42"}, want: "beads:code/42", wantErr: ErrUnresolvedArtifact},
		{name: "language not a string", a: Artifact{InlineContent: "x", Metadata: map[string]any{"language": 3}}, want: "language is a int"},
		{name: "input not a string", a: Artifact{InlineContent: "x"}, tcs: []map[string]any{{"input": 5.0}}, want: `test case 0: "input" is a float64`},
		{name: "hidden not a boolean", a: Artifact{InlineContent: "x"}, tcs: []map[string]any{{}, {"hidden": "yes"}}, want: `test case 1: "hidden" is a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ArtifactToExecutionRequest(tt.a, tt.tcs, FleetRequestOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestExecutionResultToArtifact(t *testing.T) {
	small := ExecutionResult{
		RequestID: "r1", Status: StatusSomePassed, TotalTimeMS: 12, Summary: "1/2 test cases passed",
		TestResults: []TestResult{
			{TestID: "a", Status: TestPassed, ExecutionTimeMS: 3, MemoryUsedKB: 100},
			{TestID: "b", Status: TestWrongAnswer, ExecutionTimeMS: 4, MemoryUsedKB: 200},
		},
	}
	a, large := ExecutionResultToArtifact(small, "")
	wantContent := `{
  "status": "some_passed",
  "passed": 1,
  "total": 2,
  "total_time_ms": 12,
  "summary": "1/2 test cases passed",
  "test_results": [
    {
      "id": "a",
      "status": "passed",
      "time_ms": 3,
      "memory_kb": 100
    },
    {
      "id": "b",
      "status": "wrong_answer",
      "time_ms": 4,
      "memory_kb": 200
    }
  ]
}`
	if a.InlineContent != wantContent || large != "" || a.ContentRef != "" {
		t.Errorf("inline content =\n%s\nlarge %q ref %q", a.InlineContent, large, a.ContentRef)
	}

	var many []TestResult
	for i := range 20 {
		many = append(many, TestResult{TestID: fmt.Sprintf("t%d", i), Status: TestPassed})
	}
	big := ExecutionResult{RequestID: "r2", Status: StatusAllPassed, Summary: "All 20 test cases passed", TestResults: many}
	for _, tt := range []struct{ key, wantRef string }{
		{"", "beads:execution/results/r2"},
		{"custom/key", "beads:custom/key"},
	} {
		a, large := ExecutionResultToArtifact(big, tt.key)
		if a.ContentRef != tt.wantRef || a.InlineContent != "" || len(large) < InlineThreshold {
			t.Errorf("key %q: ref %q, inline %d bytes, large %d bytes", tt.key, a.ContentRef, len(a.InlineContent), len(large))
		}
		var decoded map[string]any
		if err := json.Unmarshal([]byte(large), &decoded); err != nil || decoded["passed"] != 20.0 || decoded["total"] != 20.0 {
			t.Errorf("large content does not decode to the counts: %v %v", decoded, err)
		}
		if a.Metadata["passed"] != 20 || a.Metadata["status"] != "all_passed" {
			t.Errorf("metadata = %v", a.Metadata)
		}
	}

	// No results still encode a list, and "<" is not escaped.
	a, _ = ExecutionResultToArtifact(ExecutionResult{Summary: "a<b"}, "")
	if !strings.Contains(a.InlineContent, `"test_results": []`) || !strings.Contains(a.InlineContent, "a<b") {
		t.Errorf("content = %s", a.InlineContent)
	}
}

func TestInlineThresholdBoundary(t *testing.T) {
	base := ExecutionResult{Status: StatusAllFailed}
	a, _ := ExecutionResultToArtifact(base, "")
	pad := InlineThreshold - len(a.InlineContent)
	for _, tt := range []struct {
		extra  int
		inline bool
	}{{pad - 1, true}, {pad, false}} {
		r := base
		r.Summary = strings.Repeat("s", tt.extra)
		a, large := ExecutionResultToArtifact(r, "")
		if (a.InlineContent != "") != tt.inline || (large == "") != tt.inline {
			t.Errorf("content of %d bytes: inline %v, want %v", len(a.InlineContent)+len(large), a.InlineContent != "", tt.inline)
		}
	}
}
