package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
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
