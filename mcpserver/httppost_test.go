package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

var postSeeds = append([]string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"t"},"name":"judge_code"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":3}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":{"a":1}}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"progressToken":"not in _meta"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":"t"}}},{"jsonrpc":"2.0","method":"n"}]`,
	"  \n", "",
}, lineSeeds...)

// FuzzDecodePost checks that a POST body decodes as the SDK decodes it,
// that what is refused is refused with a JSON-RPC error code, and that a
// progress token is only ever one the protocol allows.
func FuzzDecodePost(f *testing.F) {
	for _, s := range postSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := decodePost(body)
		if err != nil {
			var be *bodyError
			if !errors.As(err, &be) || (be.code != jsonrpc.CodeParseError && be.code != jsonrpc.CodeInvalidRequest) || be.msg == "" {
				t.Fatalf("%q: error %#v is not a body error with a JSON-RPC code", body, err)
			}
			return
		}
		if len(p.msgs) == 0 || p.calls > len(p.msgs) || len(p.ids()) != p.calls {
			t.Fatalf("%q: %d messages, %d calls, ids %v", body, len(p.msgs), p.calls, p.ids())
		}
		switch p.token.(type) {
		case nil, string, float64:
		default:
			t.Fatalf("%q: progress token %#v", body, p.token)
		}
		if p.batch && (p.token != nil || p.init) {
			t.Fatalf("%q: a batch with a token or an initialize", body)
		}
		if !p.batch && !hasFoldedKey(body) {
			want, err := jsonrpc.DecodeMessage([]byte(strings.TrimSpace(string(body))))
			if err == nil && !reflect.DeepEqual(p.msgs[0], want) {
				t.Fatalf("%q: decoded %#v, the SDK %#v", body, p.msgs[0], want)
			}
		}
	})
}

// hasFoldedKey reports whether data holds a key of the JSON-RPC envelope
// or of its error object in other letter case ("Params", "messAge").
// encoding/json takes such a key for the field, the SDK's decoder does
// not; the leniency is harmless, and the fuzzers leave it out of their
// comparison.
func hasFoldedKey(data []byte) bool {
	lower := bytes.ToLower(data)
	for _, key := range []string{`"jsonrpc"`, `"id"`, `"method"`, `"params"`, `"result"`, `"error"`, `"code"`, `"message"`, `"data"`} {
		if len(lower) != len(data) {
			// Lowering changed the length (invalid UTF-8, or a letter
			// such as the Kelvin sign that folds to ASCII): offsets in
			// lower are not those of data, so any key counts as folded.
			if bytes.Contains(lower, []byte(key)) {
				return true
			}
			continue
		}
		for i := 0; ; {
			j := bytes.Index(lower[i:], []byte(key))
			if j < 0 {
				break
			}
			if string(data[i+j:i+j+len(key)]) != key {
				return true
			}
			i += j + 1
		}
	}
	return false
}

func TestDecodePost(t *testing.T) {
	tests := []struct {
		body  string
		calls int
		batch bool
		init  bool
		token any
		code  int64 // of the error, 0 for none
	}{
		{postSeeds[0], 1, false, false, "t", 0},
		{postSeeds[1], 1, false, false, float64(3), 0},
		{postSeeds[2], 1, false, false, nil, 0},
		{postSeeds[3], 1, false, false, nil, 0},
		{postSeeds[4], 1, false, true, nil, 0},
		{postSeeds[5], 0, false, false, nil, jsonrpc.CodeInvalidRequest},
		{postSeeds[6], 1, true, false, nil, 0},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0, false, false, nil, 0},
		{`{"jsonrpc":"2.0","id":4,"result":{}}`, 0, false, false, nil, 0},
		{`{"jsonrpc":"2.0","id":`, 0, false, false, nil, jsonrpc.CodeParseError},
		{`{"jsonrpc":"1.0","id":1,"method":"x"}`, 0, false, false, nil, jsonrpc.CodeInvalidRequest},
		{`[]`, 0, false, false, nil, jsonrpc.CodeInvalidRequest},
		{` `, 0, false, false, nil, jsonrpc.CodeParseError},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			p, err := decodePost([]byte(tt.body))
			if tt.code != 0 {
				var be *bodyError
				if !errors.As(err, &be) || be.code != tt.code {
					t.Fatalf("error %v, want code %d", err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.calls != tt.calls || p.batch != tt.batch || p.init != tt.init || p.token != tt.token {
				t.Errorf("calls %d batch %v init %v token %#v", p.calls, p.batch, p.init, p.token)
			}
		})
	}
}

// FuzzAppendResponse checks that a response is written as the SDK writes
// it, for any id and result.
func FuzzAppendResponse(f *testing.F) {
	f.Add(int64(1), "", `{"content":[]}`, false)
	f.Add(int64(-7), "", `{}`, false)
	f.Add(int64(0), "a\"b\u2028<>&", `{"x":"<tag>\u2028"}`, true)
	f.Add(int64(0), "s", `null`, true)
	f.Fuzz(func(t *testing.T, num int64, str, result string, useString bool) {
		if !json.Valid([]byte(result)) {
			return
		}
		// The SDK hands over results it marshaled, which are compact.
		var v any
		if json.Unmarshal([]byte(result), &v) != nil {
			return
		}
		compact, _ := json.Marshal(v)
		id, _ := jsonrpc.MakeID(float64(num))
		if useString {
			id, _ = jsonrpc.MakeID(str)
		}
		r := &jsonrpc.Response{ID: id, Result: compact}
		got, err := appendResponse([]byte("prefix"), r)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jsonrpc.EncodeMessage(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "prefix"+string(want) {
			t.Fatalf("wrote %s\nthe SDK %s", got[len("prefix"):], want)
		}
	})
}

func TestAppendResponseError(t *testing.T) {
	id, _ := jsonrpc.MakeID(float64(3))
	r := &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: -32602, Message: "bad"}}
	got, err := appendResponse(nil, r)
	want, _ := jsonrpc.EncodeMessage(r)
	if err != nil || string(got) != string(want) {
		t.Errorf("wrote %s (%v), the SDK %s", got, err, want)
	}
}

func TestAppendEvent(t *testing.T) {
	tests := []struct{ data, want string }{
		{`{"a":1}`, "event: message\ndata: {\"a\":1}\n\n"},
		{"{\n\"a\":1\r\n}", "event: message\ndata: {\ndata: \"a\":1\ndata: }\n\n"},
	}
	for _, tt := range tests {
		if got := string(appendEvent(nil, []byte(tt.data))); got != tt.want {
			t.Errorf("%q: %q, want %q", tt.data, got, tt.want)
		}
	}
}

func TestAccepts(t *testing.T) {
	tests := []struct {
		values    []string
		json, sse bool
	}{
		{nil, true, true},
		{[]string{"application/json, text/event-stream"}, true, true},
		{[]string{"application/json", "text/event-stream"}, true, true},
		{[]string{"Application/JSON;q=0.9"}, true, false},
		{[]string{"text/*"}, false, true},
		{[]string{"*/*"}, true, true},
		{[]string{"text/html"}, false, false},
		{[]string{""}, false, false},
	}
	for _, tt := range tests {
		if a := accepts(tt.values); a.json != tt.json || a.sse != tt.sse {
			t.Errorf("%q: %+v, want json %v sse %v", tt.values, a, tt.json, tt.sse)
		}
	}
}
