package cli

import (
	"encoding/json"
	"reflect"
	"strings"
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

// TestDecodeTestsNamesWrongTypes: a value of the wrong type in a tests
// file is named by its place in the file, never by the Go names of the
// types that decode it; `judge --tests` says so and runs nothing.
func TestDecodeTestsNamesWrongTypes(t *testing.T) {
	for _, tc := range []struct{ file, msg string }{
		{`{"input":"1"}`, "must be an array, not a JSON object"},
		{`[{"input":"1"},"2"]`, "[1]: must be an object, not a JSON string"},
		{`[{"input":"1"},{"input":"2"},{"input":3}]`, "[2].input: must be a string, not a JSON number"},
		{`[{"expected":"1"},{"expected":1}]`, "[1].expected: must be a string, not a JSON number"},
		{`[{"id":"a","timeout_ms":"1s"}]`, "[0].timeout_ms: must be an integer, not a JSON string"},
	} {
		if _, err := decodeTests([]byte(tc.file)); err == nil || err.Error() != tc.msg {
			t.Errorf("%s: %v, want %q", tc.file, err, tc.msg)
		}
	}

	ta := newApp(t, "")
	tests := source(t, "tests.json", `[{"input":"","expected_output":"hi"},{"input":[],"expected_output":"hi"}]`)
	code := ta.run("judge", "--tests", tests, source(t, "main.fk", "print hi"))
	if want := "[1].input: must be a string, not a JSON array"; code != 2 || !strings.Contains(ta.stderr.String(), want) || strings.Contains(ta.stderr.String(), "Go ") {
		t.Errorf("exit %d, stderr %q; want 2 naming %q", code, ta.stderr, want)
	}
	if n := len(ta.fake.Specs()); n != 0 {
		t.Errorf("%d runs of a refused command", n)
	}
}
