package mcpserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/strictjson"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/multifile"
)

func TestDecodeArgs(t *testing.T) {
	tests := []struct {
		raw  string
		want string
	}{
		{`{"language":"python","code":"x"}`, ""},
		{``, ""},
		{`null`, ""},
		{`[]`, "arguments must be a JSON object"},
		{`"x"`, "arguments must be a JSON object"},
		{`{"language":`, "arguments are not valid JSON"},
		{`{"code":"x"} {}`, "arguments must be one JSON object"},
		{`{"timeout":true}`, `argument "timeout" must be a number, not a bool`},
		{`{"memory_limit":1.5}`, `argument "memory_limit" must be an integer, not a number 1.5`},
		{`{"session_id":["a"]}`, `argument "session_id" must be a string, not an array`},
		{`{"files":[{"path":"a"},{"path":1}]}`, `argument "files[1].path" must be a string, not a number`},
		{`{"Language":"python"}`, ""},
		{`{"extra":1}`, `unknown argument "extra" (the arguments are args, artifacts, code, compiler_flags, entry, env, files, language, memory_limit, mode, session_id, session_ttl_seconds, stdin, timeout)`},
	}
	for _, tt := range tests {
		var a executeArgs
		err := decodeArgs(json.RawMessage(tt.raw), &a)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.raw, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("%s: %v, want %q", tt.raw, err, tt.want)
		}
	}
}

// TestExecuteArgTypeErrorsNameTheArgument: a value of the wrong type in
// any argument of execute_code (those it shares with /v1/run, which come
// from an embedded struct, among them) is refused naming the argument as
// the tool's schema does.
func TestExecuteArgTypeErrorsNameTheArgument(t *testing.T) {
	names := strictjson.Names(executeArgs{})
	if !slices.Contains(names, "memory_limit") || !slices.Contains(names, "session_id") {
		t.Fatalf("arguments %v", names)
	}
	for _, name := range names {
		// No argument is a boolean.
		var a executeArgs
		err := decodeArgs(json.RawMessage(fmt.Sprintf(`{%q:true}`, name)), &a)
		if err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("argument %q must be ", name)) || !strings.HasSuffix(err.Error(), ", not a bool") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestExecuteSchemaMatchesDecoder: execute_code's input schema refuses
// other arguments, as its decoder does, and lists exactly the arguments
// the decoder takes, so that one added to either is added to both.
func TestExecuteSchemaMatchesDecoder(t *testing.T) {
	s, _ := newServer(t)
	schema := s.executeSchema()
	if schema["additionalProperties"] != false {
		t.Error("additionalProperties is not false")
	}
	documented := slices.Sorted(maps.Keys(schema["properties"].(map[string]any)))
	if decoded := strictjson.Names(executeArgs{}); !slices.Equal(documented, decoded) {
		t.Errorf("the schema lists %v; the decoder takes %v", documented, decoded)
	}
}

// TestJudgeSchemaMatchesDecoder: judge_code's input schema refuses other
// arguments, as its decoder does, and lists exactly the arguments the
// decoder takes, at the top and in each object it takes (a test case, a
// subtask, a file, a checker or interactor), so that one added to either
// is added to both. A test case's "expected", the alias its decoder
// accepts for expected_output, is among the names it takes.
func TestJudgeSchemaMatchesDecoder(t *testing.T) {
	s, _ := newServer(t)
	schema := s.judgeSchema()
	props := schema["properties"].(map[string]any)
	itemsOf := func(name string) map[string]any {
		return props[name].(map[string]any)["items"].(map[string]any)
	}
	for _, tc := range []struct {
		name   string
		object map[string]any
		names  []string
	}{
		{"arguments", schema, strictjson.Names(judgeArgs{})},
		{"test_cases", itemsOf("test_cases"), strictjson.Names(judge.TestCase{})},
		{"subtasks", itemsOf("subtasks"), strictjson.Names(judge.Subtask{})},
		{"files", itemsOf("files"), strictjson.Names(multifile.File{})},
		{"checker", props["checker"].(map[string]any), strictjson.Names(judge.Tool{})},
		{"interactor", props["interactor"].(map[string]any), strictjson.Names(judge.Tool{})},
	} {
		if tc.object["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties is not false", tc.name)
		}
		documented := slices.Sorted(maps.Keys(tc.object["properties"].(map[string]any)))
		if decoded := slices.Sorted(slices.Values(tc.names)); !slices.Equal(documented, decoded) {
			t.Errorf("%s: the schema lists %v; the decoder takes %v", tc.name, documented, decoded)
		}
		required, _ := tc.object["required"].([]string)
		for _, name := range required {
			if !slices.Contains(tc.names, name) {
				t.Errorf("%s: %s is required but not taken", tc.name, name)
			}
		}
	}
}

// TestJudgeCodeRequestID: judge_code takes the request_id its schema
// lists and echoes it in the result, as /v1/judge does.
func TestJudgeCodeRequestID(t *testing.T) {
	s, _ := newServer(t)
	cs := connect(t, s, "memory", nil)
	res := call(t, cs, ToolJudgeCode, map[string]any{"request_id": "call-7", "language": "python", "code": "echo",
		"test_cases": []map[string]any{{"input": "1\n", "expected_output": "1\n"}}})
	var r judge.ExecutionResult
	structuredInto(t, res, &r)
	if res.IsError || r.RequestID != "call-7" {
		t.Errorf("isError %v, request_id %q", res.IsError, r.RequestID)
	}
}

func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{`{"language":"python","code":"x","timeout":3}`, `[]`, `{"test_cases":[{"expected":"1"}]}`, `{"a":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var a executeArgs
		if err := decodeArgs(raw, &a); err != nil && err.Error() == "" {
			t.Error("empty error message")
		}
		var j judgeArgs
		_ = decodeArgs(raw, &j)
	})
}
