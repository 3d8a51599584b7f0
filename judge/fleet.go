package judge

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Artifact is the Fleet's unit of exchange (its handoff protocol's
// Artifact). Exactly one of InlineContent and ContentRef is
// normally set; an empty string means absent.
type Artifact struct {
	// ArtifactType is "code" for a solution, "test_result" for a verdict.
	ArtifactType string `json:"artifact_type"`
	// ContentRef points to content stored elsewhere, as "beads:<key>".
	ContentRef string `json:"content_ref,omitempty"`
	// InlineContent is the content itself, when small.
	InlineContent string `json:"inline_content,omitempty"`
	// Metadata holds, for code, "language"; for a test result, "status",
	// "passed" and "total".
	Metadata map[string]any `json:"metadata"`
}

// Defaults of ArtifactToExecutionRequest.
const (
	// FleetDefaultLanguage is used when the artifact names no language.
	FleetDefaultLanguage = "python"
	// InlineThreshold is the size from which a result artifact's content
	// is stored in Beads rather than inline.
	InlineThreshold = 1024
	// BeadsPrefix starts every content reference.
	BeadsPrefix = "beads:"
)

// ErrUnresolvedArtifact is returned for an artifact whose code is only a
// content reference: the caller must fetch it from Beads first.
var ErrUnresolvedArtifact = errors.New("large artifacts must be resolved before execution")

// FleetRequestOptions tune ArtifactToExecutionRequest. Zero fields take
// their defaults: a random UUID for RequestID, DefaultTimeoutMS and
// DefaultTotalTimeoutMS.
type FleetRequestOptions struct {
	// RequestID names the request.
	RequestID string
	// TimeoutMS is the per-test timeout.
	TimeoutMS int
	// TotalTimeoutMS bounds all the tests together.
	TotalTimeoutMS int
}

// ArtifactToExecutionRequest makes a judge request of a code artifact.
// testCases are the Fleet's dictionaries with the keys "id" (default
// "test_<index>"), "input", "expected" or "expected_output" ("expected"
// wins), "hidden" (or "is_hidden") and "description"; a
// value of the wrong type is an error. The language is
// metadata["language"] lower-cased, "python" when absent. A language the table does not know is passed through rather than replaced
// by Python: the judge then reports it as unsupported instead of running,
// say, Rust code under a Python interpreter.
func ArtifactToExecutionRequest(a Artifact, testCases []map[string]any, opts FleetRequestOptions) (ExecutionRequest, error) {
	if a.InlineContent == "" && a.ContentRef != "" {
		return ExecutionRequest{}, fmt.Errorf("artifact %s: %w", a.ContentRef, ErrUnresolvedArtifact)
	}
	language := FleetDefaultLanguage
	if v, ok := a.Metadata["language"]; ok {
		s, ok := v.(string)
		if !ok {
			return ExecutionRequest{}, fmt.Errorf("artifact metadata language is a %T, not a string", v)
		}
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			language = s
		}
	}

	tests := make([]TestCase, 0, len(testCases))
	for i, m := range testCases {
		tc, err := fleetTestCase(i, m)
		if err != nil {
			return ExecutionRequest{}, err
		}
		tests = append(tests, tc)
	}

	req := ExecutionRequest{
		RequestID:      opts.RequestID,
		Code:           a.InlineContent,
		Language:       language,
		TestCases:      tests,
		TimeoutMS:      opts.TimeoutMS,
		TotalTimeoutMS: opts.TotalTimeoutMS,
		MemoryLimitMB:  DefaultMemoryLimitMB,
		CPULimit:       DefaultCPULimit,
		Metadata:       map[string]any{},
	}
	if req.RequestID == "" {
		req.RequestID = newUUID()
	}
	if req.TimeoutMS == 0 {
		req.TimeoutMS = DefaultTimeoutMS
	}
	if req.TotalTimeoutMS == 0 {
		req.TotalTimeoutMS = DefaultTotalTimeoutMS
	}
	return req, nil
}

func fleetTestCase(i int, m map[string]any) (TestCase, error) {
	tc := TestCase{ID: fmt.Sprintf("test_%d", i)}
	str := func(key string, dst *string) error {
		v, ok := m[key]
		if !ok || v == nil {
			return nil
		}
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("test case %d: %q is a %T, not a string", i, key, v)
		}
		*dst = s
		return nil
	}
	boolean := func(key string, dst *bool) error {
		v, ok := m[key]
		if !ok || v == nil {
			return nil
		}
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("test case %d: %q is a %T, not a boolean", i, key, v)
		}
		*dst = *dst || b
		return nil
	}
	// "expected" is read last so that it wins over "expected_output".
	for _, err := range []error{
		str("id", &tc.ID),
		str("input", &tc.Input),
		str("expected_output", &tc.ExpectedOutput),
		str("expected", &tc.ExpectedOutput),
		str("description", &tc.Description),
		boolean("hidden", &tc.IsHidden),
		boolean("is_hidden", &tc.IsHidden),
	} {
		if err != nil {
			return TestCase{}, err
		}
	}
	return tc, nil
}

// fleetContent is the JSON stored for a result artifact, in the field order
// Fleet's readers expect.
type fleetContent struct {
	Status      ExecutionStatus   `json:"status"`
	Passed      int               `json:"passed"`
	Total       int               `json:"total"`
	TotalTimeMS int64             `json:"total_time_ms"`
	Summary     string            `json:"summary"`
	TestResults []fleetTestResult `json:"test_results"`
}

type fleetTestResult struct {
	ID       string     `json:"id"`
	Status   TestStatus `json:"status"`
	TimeMS   int64      `json:"time_ms"`
	MemoryKB int64      `json:"memory_kb"`
}

// ExecutionResultToArtifact makes a result artifact of a judge result. It
// returns a "test_result" artifact and, when the content (indented JSON) is
// InlineThreshold bytes or more, that content for the caller to store in
// Beads under the artifact's ContentRef ("beads:" + beadsKey, or
// "beads:execution/results/<request_id>" when beadsKey is empty);
// largeContent is empty when the content is inline.
func ExecutionResultToArtifact(r ExecutionResult, beadsKey string) (a Artifact, largeContent string) {
	c := fleetContent{
		Status:      r.Status,
		Total:       len(r.TestResults),
		TotalTimeMS: r.TotalTimeMS,
		Summary:     r.Summary,
		TestResults: make([]fleetTestResult, 0, len(r.TestResults)),
	}
	for _, t := range r.TestResults {
		if t.Status == TestPassed {
			c.Passed++
		}
		c.TestResults = append(c.TestResults, fleetTestResult{
			ID: t.TestID, Status: t.Status, TimeMS: t.ExecutionTimeMS, MemoryKB: t.MemoryUsedKB,
		})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	// Encoding plain strings and numbers cannot fail.
	_ = enc.Encode(c)
	content := strings.TrimSuffix(buf.String(), "\n")

	a = Artifact{
		ArtifactType: "test_result",
		Metadata: map[string]any{
			"status": string(r.Status),
			"passed": c.Passed,
			"total":  c.Total,
		},
	}
	if len(content) < InlineThreshold {
		a.InlineContent = content
		return a, ""
	}
	key := beadsKey
	if key == "" {
		key = "execution/results/" + r.RequestID
	}
	a.ContentRef = BeadsPrefix + key
	return a, content
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
