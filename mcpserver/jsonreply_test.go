package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/judge"
)

const (
	respEvent  = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":1}}\n\n"
	notifEvent = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"
)

// streamOf is a handler that answers as the SDK does for a POST: headers
// of an event stream, then these writes, each flushed.
func streamOf(writes ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Connection", "keep-alive")
		for _, s := range writes {
			_, _ = w.Write([]byte(s))
			_ = http.NewResponseController(w).Flush()
		}
	})
}

func TestJSONReplies(t *testing.T) {
	plainError := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "session not found", http.StatusNotFound)
	})
	accepted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	silent := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
	})
	tests := []struct {
		name        string
		method      string
		body        string
		next        http.Handler
		status      int
		contentType string
		respBody    string
	}{
		{"response alone", "POST", ` {"jsonrpc":"2.0","id":1,"method":"x"}`, streamOf(respEvent), 200, "application/json", `{"jsonrpc":"2.0","id":1,"result":{"x":1}}`},
		{"notification first", "POST", `{"jsonrpc":"2.0","id":1,"method":"x"}`, streamOf(notifEvent, respEvent), 200, "text/event-stream", notifEvent + respEvent},
		{"batch", "POST", `[{"jsonrpc":"2.0","id":1,"method":"x"}]`, streamOf(respEvent), 200, "text/event-stream", respEvent},
		{"event with an id", "POST", `{"jsonrpc":"2.0","id":1,"method":"x"}`, streamOf("event: message\nid: s_0\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"), 200, "text/event-stream", "event: message\nid: s_0\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"},
		{"two events in one write", "POST", `{"jsonrpc":"2.0","id":1,"method":"x"}`, streamOf(respEvent + respEvent), 200, "text/event-stream", respEvent + respEvent},
		{"GET stream", "GET", "", streamOf(respEvent), 200, "text/event-stream", respEvent},
		{"error status", "POST", `{"jsonrpc":"2.0","id":1,"method":"x"}`, plainError, 404, "text/plain; charset=utf-8", "session not found\n"},
		{"accepted", "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, accepted, 202, "", ""},
		{"no event", "POST", `{"jsonrpc":"2.0","id":1,"method":"x"}`, silent, 200, "text/event-stream", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(tt.method, "/mcp", strings.NewReader(tt.body))
			jsonReplies(tt.next).ServeHTTP(rec, req)
			if rec.Code != tt.status || rec.Header().Get("Content-Type") != tt.contentType || rec.Body.String() != tt.respBody {
				t.Fatalf("got %d %q %q, want %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body, tt.status, tt.contentType, tt.respBody)
			}
			if tt.contentType == "application/json" {
				if got := rec.Header().Get("Content-Length"); got != "41" || rec.Header().Get("Connection") != "" {
					t.Errorf("Content-Length %q, Connection %q", got, rec.Header().Get("Connection"))
				}
				if !rec.Flushed {
					t.Error("the JSON body was not flushed")
				}
			}
		})
	}
}

func TestIsResponse(t *testing.T) {
	tests := []struct {
		data string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`, true},
		{`{"jsonrpc":"2.0","id":"a\"}","error":{"code":-32601,"message":"no"}}`, true},
		{` { "id" : [1,{"a":"]"}] , "result" : null }`, true},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":2,"method":"sampling/createMessage","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":1}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":}`, false},
		{`{"jsonrpc":"2.0","id":{"a":1],"result":{}}`, false},
		{`{"jsonrpc":"2.0" "result":{}}`, false},
		{`["result"]`, false},
		{`{"id":1,"res\u0075lt":{}}`, false},
		{``, false},
		{`{`, false},
	}
	for _, tt := range tests {
		if got := isResponse([]byte(tt.data)); got != tt.want {
			t.Errorf("isResponse(%s) = %v, want %v", tt.data, got, tt.want)
		}
	}
}

// FuzzIsResponse checks isResponse against encoding/json on valid JSON:
// a response is an object with "result" or "error" and no "method".
func FuzzIsResponse(f *testing.F) {
	for _, s := range lineSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"id":"x\\","result":[{"a":"}"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := isResponse(data)
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			if got && json.Valid(data) {
				t.Fatalf("%q: a response, but not an object", data)
			}
			return
		}
		_, hasMethod := obj["method"]
		_, hasResult := obj["result"]
		_, hasError := obj["error"]
		if got && !hasResult && !hasError {
			t.Fatalf("%q: a response without result or error", data)
		}
		if !got && !hasMethod && (hasResult || hasError) && !bytes.Contains(data, []byte(`\`)) {
			t.Fatalf("%q: a response not recognised", data)
		}
	})
}

// TestHTTPContentTypes drives /mcp with raw requests, as a client other
// than the SDK's would: a call that sends nothing before its result gets
// one JSON body, a judge_code with a progress token gets an event stream
// with the progress before the result.
func TestHTTPContentTypes(t *testing.T) {
	s, _ := newServer(t)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	post := func(sid, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("POST", ts.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	jsonBody := func(resp *http.Response, v any) {
		t.Helper()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/json" {
			t.Fatalf("status %d, Content-Type %q", resp.StatusCode, ct)
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}

	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	var init struct {
		ID     int `json:"id"`
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	jsonBody(resp, &init)
	if sid == "" || init.ID != 1 || init.Result.ProtocolVersion != "2025-06-18" {
		t.Fatalf("initialize: session %q, %+v", sid, init)
	}
	if resp := post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: status %d", resp.StatusCode)
	}

	// execute_code, even with a progress token, sends only its result.
	var exec struct {
		ID     int `json:"id"`
		Result struct {
			IsError           bool                      `json:"isError"`
			StructuredContent struct{ Stdout string } `json:"structuredContent"`
		} `json:"result"`
	}
	jsonBody(post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"progressToken":"e"},"name":"execute_code","arguments":{"language":"python","code":"print hi"}}}`), &exec)
	if exec.ID != 2 || exec.Result.IsError || exec.Result.StructuredContent.Stdout != "hi\n" {
		t.Fatalf("execute_code: %+v", exec)
	}
	// An unknown tool is an error response, still one JSON body.
	var unknown struct {
		ID    int             `json:"id"`
		Error json.RawMessage `json:"error"`
	}
	jsonBody(post(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope","arguments":{}}}`), &unknown)
	if unknown.ID != 3 || unknown.Error == nil {
		t.Fatalf("unknown tool: %+v", unknown)
	}

	resp = post(sid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"progressToken":"j"},"name":"judge_code","arguments":{"language":"python","code":"echo","test_cases":[{"input":"1\n","expected_output":"1\n"},{"input":"2\n","expected_output":"2\n"}]}}}`)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("judge_code with a progress token: status %d, Content-Type %q", resp.StatusCode, ct)
	}
	var progress []float64
	var result *struct {
		ID     int `json:"id"`
		Result struct {
			StructuredContent judge.ExecutionResult `json:"structuredContent"`
		} `json:"result"`
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var msg struct {
			Method string `json:"method"`
			Params struct {
				ProgressToken string  `json:"progressToken"`
				Progress      float64 `json:"progress"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(data), &msg); err != nil {
			t.Fatal(err)
		}
		if msg.Method == "notifications/progress" && msg.Params.ProgressToken == "j" {
			progress = append(progress, msg.Params.Progress)
			continue
		}
		if err := json.Unmarshal([]byte(data), &result); err != nil {
			t.Fatal(err)
		}
	}
	if len(progress) != 3 || result == nil || result.ID != 4 || result.Result.StructuredContent.Status != judge.StatusAllPassed {
		t.Fatalf("judge_code stream: progress %v, result %+v", progress, result)
	}
}
