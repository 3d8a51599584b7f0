package judge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDecodeRequest(t *testing.T) {
	full := `{
		"request_id": "r1", "code": "print(1)", "language": "python",
		"test_cases": [
			{"id": "a", "input": "1", "expected_output": "2", "is_hidden": true, "timeout_ms": 300, "description": "first"},
			{"id": "b", "input": "", "expected": "3"},
			{"id": "c", "expected": "4", "expected_output": "4", "timeout_ms": null}
		],
		"timeout_ms": 1000, "total_timeout_ms": 9000, "memory_limit_mb": 64, "cpu_limit": 0.5,
		"metadata": {"k": [1, "v"]}, "compare": "tokens"
	}`
	got, err := DecodeRequest(strings.NewReader(full))
	if err != nil {
		t.Fatal(err)
	}
	want := ExecutionRequest{
		RequestID: "r1", Code: "print(1)", Language: "python",
		TestCases: []TestCase{
			{ID: "a", Input: "1", ExpectedOutput: "2", IsHidden: true, TimeoutMS: 300, Description: "first"},
			{ID: "b", ExpectedOutput: "3"},
			{ID: "c", ExpectedOutput: "4"},
		},
		TimeoutMS: 1000, TotalTimeoutMS: 9000, MemoryLimitMB: 64, CPULimit: 0.5,
		Metadata: map[string]any{"k": []any{1.0, "v"}}, Compare: "tokens",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DecodeRequest =\n%+v\nwant\n%+v", got, want)
	}
}

func TestDecodeRequestTools(t *testing.T) {
	req, err := DecodeRequest(strings.NewReader(`{"checker": {"language": "cpp", "code": "int main(){}"}, "interactor": null}`))
	if err != nil || req.Checker == nil || *req.Checker != (Tool{Language: "cpp", Code: "int main(){}"}) || req.Interactor != nil {
		t.Fatalf("%+v %v", req, err)
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantErr error
		wantMsg string
	}{
		{"empty body", "", ErrInvalidRequest, "empty body"},
		{"not an object", "[1]", ErrInvalidRequest, "invalid request: must be an object, not a JSON array"},
		{"wrong type", `{"timeout_ms": "5s"}`, ErrInvalidRequest, "timeout_ms"},
		{"wrong nested type", `{"test_cases": [{"input": 5}]}`, ErrInvalidRequest, "test_cases[0].input: must be a string, not a JSON number"},
		{"expected and expected_output differ", `{"test_cases": [{"id": "t", "expected": "1", "expected_output": "2"}]}`, ErrInvalidRequest, `test case "t": expected and expected_output differ`},
		{"trailing data", `{"code": "x"} {"code": "y"}`, ErrInvalidRequest, "unexpected data after the request object"},
		{"truncated", `{"code": "x"`, ErrInvalidRequest, "unexpected EOF"},
		{"unknown field", `{"code": "x", "file": []}`, ErrInvalidRequest, "file: unknown field"},
		{"unknown field of a file", `{"code": "x", "files": [{"path": "a", "mode": 7}]}`, ErrInvalidRequest, "files[0].mode: unknown field"},
		{"unknown nested field", `{"test_cases": [{"id": "a"}, {"id": "b", "expected_answer": "1"}]}`, ErrInvalidRequest, "test_cases[1].expected_answer: unknown field"},
		{"another system's field", `{"source_code": "x", "language_id": 71}`, ErrInvalidRequest, "source_code: unknown field"},
		{"unknown checker field", `{"checker": {"language": "cpp", "code": "x", "timeout": 5}}`, ErrInvalidRequest, "checker.timeout: unknown field"},
		{"checker not an object", `{"interactor": "python"}`, ErrInvalidRequest, "interactor: must be an object, not a JSON string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRequest(strings.NewReader(tt.body))
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("DecodeRequest error = %v, want %v containing %q", err, tt.wantErr, tt.wantMsg)
			}
		})
	}
}

// TestDecodeRequestTypeErrorsNameTheField: a value of the wrong type, at
// any depth (through TestCase's own decoding among them), is refused
// naming the field as the request writes it, never by a Go name.
func TestDecodeRequestTypeErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ body, msg string }{
		{`{"timeout_ms": "5s"}`, "timeout_ms: must be an integer, not a JSON string"},
		{`{"cpu_limit": true}`, "cpu_limit: must be a number, not a JSON bool"},
		{`{"test_cases": {"input": "1"}}`, "test_cases: must be an array, not a JSON object"},
		{`{"test_cases": [{"input": "1"}, "2"]}`, "test_cases[1]: must be an object, not a JSON string"},
		{`{"test_cases": [{"input": "1"}, {"input": "2"}, {"input": 3}]}`, "test_cases[2].input: must be a string, not a JSON number"},
		{`{"test_cases": [{"id": "a", "expected": "1"}, {"id": "b", "expected": ["2"]}]}`, "test_cases[1].expected: must be a string, not a JSON array"},
		{`{"test_cases": [{"is_hidden": false}, {"is_hidden": "yes"}]}`, "test_cases[1].is_hidden: must be a boolean, not a JSON string"},
		{`{"test_cases": [{"timeout_ms": 1.5}]}`, "test_cases[0].timeout_ms: must be an integer, not a JSON number 1.5"},
		{`{"subtasks": [{"id": "s", "tests": ["a"]}, {"id": "t", "tests": ["b", 7]}]}`, "subtasks[1].tests[1]: must be a string, not a JSON number"},
		{`{"files": [{"path": "a", "content": ""}, {"path": "b", "executable": "yes"}]}`, "files[1].executable: must be a boolean, not a JSON string"},
		{`{"env": {"A": "1", "B": 2}}`, "env.B: must be a string, not a JSON number"},
		{`{"checker": {"language": "cpp", "code": 5}}`, "checker.code: must be a string, not a JSON number"},
	} {
		_, err := DecodeRequest(strings.NewReader(tc.body))
		if !errors.Is(err, ErrInvalidRequest) || err.Error() != "invalid request: "+tc.msg {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.msg)
		}
	}
}

// endless yields an unterminated JSON string forever.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

func TestDecodeRequestBoundsItsReading(t *testing.T) {
	const limit = 4096
	r := &countingReader{r: io.MultiReader(strings.NewReader(`{"code": "`), endless{})}
	_, err := decodeRequest(r, limit)
	if !errors.Is(err, ErrRequestTooLarge) || !strings.Contains(err.Error(), "more than 4096 bytes") {
		t.Fatalf("error = %v, want ErrRequestTooLarge", err)
	}
	if r.n > limit+1 {
		t.Errorf("read %d bytes, more than the limit + 1", r.n)
	}

	tests := []struct {
		name    string
		body    string
		wantErr error
	}{
		{"exactly at the limit", `{"code": "` + strings.Repeat("x", limit-12) + `"}`, nil},
		{"one byte over", `{"code": "` + strings.Repeat("x", limit-11) + `"}`, ErrRequestTooLarge},
		{"whitespace past the limit after a complete object", `{"code": "x"}` + strings.Repeat(" ", limit), ErrRequestTooLarge},
	}
	for _, tt := range tests {
		_, err := decodeRequest(strings.NewReader(tt.body), limit)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%s (%d bytes): error = %v, want %v", tt.name, len(tt.body), err, tt.wantErr)
		}
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestRequestJSONRoundTrip(t *testing.T) {
	in := twoSumRequest()
	in.TestCases[0].TimeoutMS = 700
	in.Metadata = map[string]any{"source": "fleet"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeRequest(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip changed the request:\n%+v\n%+v", in, out)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add(`{"request_id":"r","code":"print(1)","language":"python","test_cases":[{"id":"t","input":"a","expected":"A"}]}`)
	f.Add(`{"code":"x","language":"java","test_cases":[{"input":"a","expected_output":"A","is_hidden":true,"timeout_ms":100}],"timeout_ms":100,"total_timeout_ms":100,"memory_limit_mb":16,"cpu_limit":0.1,"compare":"float:1e-3"}`)
	f.Add(`{"test_cases":[{"expected":"1","expected_output":"1"}],"metadata":{"a":{"b":[null,true]}}}`)
	f.Add(`{}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, body string) {
		req, err := DecodeRequest(strings.NewReader(body))
		if err != nil {
			if !errors.Is(err, ErrInvalidRequest) && !errors.Is(err, ErrRequestTooLarge) {
				t.Fatalf("error %v wraps neither ErrInvalidRequest nor ErrRequestTooLarge", err)
			}
			return
		}
		// What decodes re-encodes to something that decodes the same.
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("re-encoding a decoded request: %v", err)
		}
		again, err := DecodeRequest(strings.NewReader(string(b)))
		if err != nil {
			t.Fatalf("decoding a re-encoded request: %v", err)
		}
		b2, _ := json.Marshal(again)
		if string(b) != string(b2) {
			t.Fatalf("round trip not stable:\n%s\n%s", b, b2)
		}
		// Whatever was decoded, the judge answers without panicking and
		// with a known status. Every input passes on the fake engine.
		e := newEngine(nil)
		e.prog.scripts = map[string]script{}
		for _, tc := range req.TestCases {
			e.prog.scripts[tc.Input] = prints(tc.ExpectedOutput)
		}
		j := New(e, Options{Parallel: 2, Now: fakeClock(time.Millisecond)})
		res := j.Execute(context.Background(), req)
		inputs := map[string]bool{}
		for _, tc := range req.TestCases {
			inputs[tc.Input] = true
		}
		unique := len(inputs) == len(req.TestCases)
		switch res.Status {
		case StatusAllPassed:
		case StatusSomePassed, StatusAllFailed:
			if unique {
				t.Fatalf("status %q for a program that prints every expected output (%s)", res.Status, res.Summary)
			}
		case StatusSandboxError:
			if res.ErrorInfo == nil || len(res.TestResults) != 0 {
				t.Fatalf("sandbox_error without error_info or with test results: %+v", res)
			}
		default:
			t.Fatalf("status %q for a program that prints every expected output (%s)", res.Status, res.Summary)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("encoding the result: %v", err)
		}
	})
}
