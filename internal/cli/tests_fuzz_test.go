package cli

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/coderunner/coderunner/judge"
)

// FuzzDecodeTests: a --tests file of any content is read into test cases
// or refused with an error, never a panic; what is read becomes a request
// that validates or is refused as invalid, and re-encodes to the same
// test cases.
func FuzzDecodeTests(f *testing.F) {
	for _, s := range []string{
		`[{"id":"t1","input":"1 2\n","expected_output":"3\n"},{"id":"t2","input":"5 7\n","expected_output":"12\n","is_hidden":true}]`,
		`[{"input":"a","expected":"A","timeout_ms":500}]`,
		`[{"id":"big","input":"","expected_output":"","timeout_ms":100000}]`,
		`[{"input":null,"expected_output":1}]`,
		`[]`, `{}`, `null`, `[[]]`, `[{"id":"` + "\u00e9\\u0000" + `"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		tests, err := decodeTests(raw)
		if err != nil {
			return
		}
		req := judge.ExecutionRequest{RequestID: "cli-1", Code: "print(1)", Language: "python", TestCases: tests,
			TotalTimeoutMS: judge.DefaultTotalTimeoutMS}
		if err := req.WithDefaults().Validate(); err != nil && err.Error() == "" {
			t.Fatal("a refused request without a message")
		}
		b, err := json.Marshal(tests)
		if err != nil {
			t.Fatalf("re-encoding decoded tests: %v", err)
		}
		again, err := decodeTests(b)
		if err != nil {
			t.Fatalf("decoding re-encoded tests: %v\n%s", err, b)
		}
		if len(tests) > 0 && !reflect.DeepEqual(tests, again) {
			t.Fatalf("round trip changed the tests:\n%+v\n%+v", tests, again)
		}
	})
}

// TestDecodeTestsRefusesUnknownFields: a field a test case does not have
// is named by its place in the file, not ignored.
func TestDecodeTestsRefusesUnknownFields(t *testing.T) {
	_, err := decodeTests([]byte(`[{"id":"a","expected":"1"},{"id":"b","expected_answer":"2"}]`))
	if err == nil || err.Error() != "[1].expected_answer: unknown field" {
		t.Errorf("decodeTests: %v", err)
	}
	if _, err := decodeTests([]byte(`[{"id":"a","expected":"1","is_hidden":true}]`)); err != nil {
		t.Errorf("known fields refused: %v", err)
	}
}
