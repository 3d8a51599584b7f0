package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coderunner/coderunner/internal/strictjson"
	"github.com/coderunner/coderunner/invoke"
	"github.com/coderunner/coderunner/judge"
)

// do sends one request to s and checks the answer against the OpenAPI
// document.
func do(t *testing.T, s *Server, method, path, body string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if method == "POST" {
		// What every JSON client sends; tests of other types set theirs.
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	checkContract(t, method, path, rec)
	return rec
}

// errOf decodes an error body.
func errOf(t *testing.T, rec *httptest.ResponseRecorder) errorDetail {
	t.Helper()
	var b errorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatalf("error body %q: %v", rec.Body, err)
	}
	if b.Error.RequestID == "" || b.Error.RequestID != rec.Header().Get("X-Request-ID") {
		t.Errorf("request id %q in the body, %q in the header", b.Error.RequestID, rec.Header().Get("X-Request-ID"))
	}
	return b.Error
}

const validExecute = `{"execution_id":"e-1","code":"def handler(e): return 1","language":"python","event":{"x":1}}`

func TestEndpoints(t *testing.T) {
	s, fe := newTestServer(t, func(o *Options) { o.MaxBodyBytes = 2 << 20 })
	takeFakeRuns()
	big := strings.Repeat("a", 3<<20)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code, field              string // for errors: the code and the field the message starts with
	}{
		{"execute", "POST", "/execute", validExecute, 200, "", ""},
		{"execute unknown field", "POST", "/execute", `{"execution_id":"e","code":"x","language":"sh","whatever":1}`, 400, CodeBadRequest, "whatever: unknown field"},
		{"execute malformed", "POST", "/execute", `{"execution_id":`, 400, CodeBadRequest, "body"},
		{"execute empty", "POST", "/execute", ``, 400, CodeBadRequest, "body"},
		{"execute no id", "POST", "/execute", `{"code":"x","language":"python"}`, 400, CodeBadRequest, "execution_id"},
		{"execute bad id", "POST", "/execute", `{"execution_id":"a/b","code":"x","language":"python"}`, 400, CodeBadRequest, "execution_id"},
		{"execute bad language", "POST", "/execute", `{"execution_id":"e","code":"x","language":"cobol"}`, 400, CodeBadRequest, "language"},
		{"execute timeout low", "POST", "/execute", `{"execution_id":"e","code":"x","language":"python","timeout":0}`, 400, CodeBadRequest, "timeout"},
		{"execute timeout high", "POST", "/execute", `{"execution_id":"e","code":"x","language":"python","timeout":3601}`, 400, CodeBadRequest, "timeout"},
		{"execute event array", "POST", "/execute", `{"execution_id":"e","code":"x","language":"python","event":[]}`, 400, CodeBadRequest, "event"},
		{"execute code too large", "POST", "/execute", `{"execution_id":"e","language":"python","code":"` + strings.Repeat("a", invoke.MaxCodeBytes+1) + `"}`, 413, CodePayloadTooLarge, "code"},
		{"execute body too large", "POST", "/execute", `{"execution_id":"e","language":"python","stdin":"` + big + `"}`, 413, CodePayloadTooLarge, "body"},
		{"execute GET", "GET", "/execute", ``, 405, CodeMethodNotAllowed, ""},
		{"run", "POST", "/v1/run", `{"language":"python","code":"print(1)","timeout":5}`, 200, "", ""},
		{"run bad language", "POST", "/v1/run", `{"language":"cobol","code":"x"}`, 400, CodeBadRequest, "language"},
		{"run no language", "POST", "/v1/run", `{"code":"x"}`, 400, CodeBadRequest, "language"},
		{"run empty code", "POST", "/v1/run", `{"language":"python","code":""}`, 400, CodeBadRequest, "code"},
		{"run timeout", "POST", "/v1/run", `{"language":"python","code":"x","timeout":999}`, 400, CodeBadRequest, "timeout"},
		{"run memory", "POST", "/v1/run", `{"language":"python","code":"x","limits":{"memory_limit":1}}`, 400, CodeBadRequest, "limits.memory_limit"},
		{"run session", "POST", "/v1/run", `{"language":"python","code":"x","session_id":"../x"}`, 400, CodeBadRequest, "session_id"},
		{"run type", "POST", "/v1/run", `{"language":"python","code":7}`, 400, CodeBadRequest, "code"},
		{"run unknown field", "POST", "/v1/run", `{"language":"python","code":"x","checker":{}}`, 400, CodeBadRequest, "checker: unknown field"},
		{"run unknown limit", "POST", "/v1/run", `{"language":"python","code":"x","limits":{"memory":64}}`, 400, CodeBadRequest, "limits.memory: unknown field"},
		{"run trailing", "POST", "/v1/run", `{"language":"python","code":"x"} x`, 400, CodeBadRequest, "body"},
		{"run files", "POST", "/v1/run", `{"language":"python","files":[{"path":"a.py","content":"print(1)"}],"entry":"a.py"}`, 200, "", ""},
		{"run files without entry", "POST", "/v1/run", `{"language":"python","files":[{"path":"a.py","content":"x"}]}`, 400, CodeBadRequest, "code"},
		{"run file leaving", "POST", "/v1/run", `{"language":"python","code":"x","files":[{"path":"ok.py"},{"path":"../x"}]}`, 400, CodeBadRequest, "files[1].path: \"../x\" leaves the workspace"},
		{"run file absolute", "POST", "/v1/run", `{"language":"python","code":"x","files":[{"path":"/etc/passwd"}]}`, 400, CodeBadRequest, "files[0].path"},
		{"run file bad base64", "POST", "/v1/run", `{"language":"python","code":"x","files":[{"path":"a","content":"@@","encoding":"base64"}]}`, 400, CodeBadRequest, "files[0].content"},
		{"run file bad encoding", "POST", "/v1/run", `{"language":"python","code":"x","files":[{"path":"a","encoding":"gzip"}]}`, 400, CodeBadRequest, "files[0].encoding"},
		{"run file twice", "POST", "/v1/run", `{"language":"python","code":"x","files":[{"path":"a"},{"path":"a"}]}`, 400, CodeBadRequest, "files[1].path"},
		{"run files type", "POST", "/v1/run", `{"language":"python","code":"x","files":{"a":"b"}}`, 400, CodeBadRequest, "files"},
		{"run entry missing", "POST", "/v1/run", `{"language":"python","files":[{"path":"a.py"}],"entry":"b.py"}`, 400, CodeBadRequest, "entry"},
		{"run file unknown field", "POST", "/v1/run", `{"language":"python","code":"x","files":[{"path":"a","mode":7}]}`, 400, CodeBadRequest, "files[0].mode: unknown field"},
		{"run artifacts unknown field", "POST", "/v1/run", `{"language":"python","code":"x","artifacts":{"content":true}}`, 400, CodeBadRequest, "artifacts.content: unknown field"},
		{"run artifacts max_bytes", "POST", "/v1/run", `{"language":"python","code":"x","artifacts":{"include_content":true,"max_bytes":-1}}`, 400, CodeBadRequest, "artifacts"},
		{"run too large", "POST", "/v1/run", `{"language":"python","code":"` + big + `"}`, 413, CodePayloadTooLarge, "body"},
		{"judge", "POST", "/v1/judge", `{"request_id":"r","language":"python","code":"print(1)","test_cases":[{"id":"1","input":"","expected_output":"1"}]}`, 200, "", ""},
		{"judge subtasks", "POST", "/v1/judge", `{"request_id":"r","language":"python","code":"print(1)","test_cases":[{"id":"1","input":"","expected_output":"1"}],"subtasks":[{"id":"s","points":5,"tests":["1"],"policy":"min","stop_at_first_failure":true}]}`, 200, "", ""},
		{"judge subtask of no test", "POST", "/v1/judge", `{"request_id":"r","language":"python","code":"print(1)","test_cases":[{"id":"1","input":"","expected_output":"1"}],"subtasks":[{"id":"s","points":5,"tests":["2"]}]}`, 400, CodeValidation, ""},
		{"judge no tests", "POST", "/v1/judge", `{"request_id":"r","language":"python","code":"print(1)","test_cases":[]}`, 400, CodeValidation, ""},
		{"judge malformed", "POST", "/v1/judge", `{"code":`, 400, CodeValidation, ""},
		{"judge files", "POST", "/v1/judge", `{"request_id":"r","language":"python","files":[{"path":"a.py","content":"print(1)"}],"entry":"a.py","test_cases":[{"expected_output":"1"}]}`, 200, "", ""},
		{"judge file leaving", "POST", "/v1/judge", `{"request_id":"r","language":"python","code":"x","files":[{"path":"../a.py"}],"test_cases":[{"expected_output":"1"}]}`, 400, CodeValidation, "files[0].path"},
		{"judge too large", "POST", "/v1/judge", `{"code":"` + big + `"}`, 413, CodePayloadTooLarge, "body"},
		{"health", "GET", "/health", ``, 200, "", ""},
		{"health HEAD", "HEAD", "/health", ``, 200, "", ""},
		{"health POST", "POST", "/health", ``, 405, CodeMethodNotAllowed, ""},
		{"metrics", "GET", "/metrics", ``, 200, "", ""},
		{"openapi", "GET", "/openapi.yaml", ``, 200, "", ""},
		{"unknown", "GET", "/nope", ``, 404, CodeNotFound, ""},
		{"mcp not configured", "POST", "/mcp", `{}`, 404, CodeNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(t, s, tc.method, tc.path, tc.body, nil)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if tc.code == "" || tc.method == "HEAD" {
				return
			}
			e := errOf(t, rec)
			if e.Code != tc.code || !strings.HasPrefix(e.Message, tc.field) {
				t.Errorf("error %+v, want code %s naming %q", e, tc.code, tc.field)
			}
			if tc.status == 405 && rec.Header().Get("Allow") == "" {
				t.Error("405 without Allow")
			}
		})
	}
	if len(fe.runs) != 1 {
		t.Errorf("executor ran %d requests, want only the valid one", len(fe.runs))
	}
	// A judge request from a client written for another system is
	// refused naming the field, nested ones by their path.
	for body, field := range map[string]string{
		`{"request_id":"r","language":"python","code":"print(1)","test_cases":[{"id":"1","expected_answer":"1"}]}`: "test_cases[0].expected_answer: unknown field",
		`{"source_code":"print(1)","language_id":71}`:                                                              "source_code: unknown field",
	} {
		rec := do(t, s, "POST", "/v1/judge", body, nil)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), field) {
			t.Errorf("judge %s: %d %s", body, rec.Code, rec.Body)
		}
	}
	if runs := takeFakeRuns(); len(runs) != 1 || runs[0].Entry != "a.py" || len(runs[0].Files) != 1 {
		t.Errorf("/v1/run did not hand its files and entry to the runner")
	}
	rec := do(t, s, "GET", "/metrics", "", nil)
	for _, m := range []string{"coderunner_executions_total", "coderunner_execution_duration_seconds", "coderunner_active_executions",
		"coderunner_queue_depth", "coderunner_http_requests_total", `status="success"`} {
		if !strings.Contains(rec.Body.String(), m) {
			t.Errorf("metrics lack %s", m)
		}
	}
}

func TestExecuteAnswer(t *testing.T) {
	s, fe := newTestServer(t, nil)
	rec := do(t, s, "POST", "/execute", validExecute, nil)
	var res invoke.Result
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.ExecutionID != "e-1" || res.Status != invoke.StatusSuccess || string(res.ReturnValue) != `{"ok":true}` {
		t.Errorf("answer %s", rec.Body)
	}
	if got := fe.runs[0]; got.Language != "python" || got.Timeout != 30 || string(got.Event) != `{"x":1}` || got.Mode != invoke.ModeHandler {
		t.Errorf("executor got %+v", got)
	}
}

func TestAuth(t *testing.T) {
	const token = "api-token-123"
	s, _ := newTestServer(t, func(o *Options) { o.APIToken = token })
	for _, tc := range []struct {
		path, method, auth string
		status             int
	}{
		{"/execute", "POST", "", 401},
		{"/execute", "POST", "Bearer wrong", 401},
		{"/execute", "POST", "Bearer " + token + "x", 401},
		{"/execute", "POST", "Basic " + token, 401},
		{"/execute", "POST", "Bearer " + token, 200},
		{"/v1/run", "POST", "", 401},
		{"/v1/judge", "POST", "", 401},
		{"/health", "GET", "", 200},
		{"/metrics", "GET", "", 200},
		{"/openapi.yaml", "GET", "", 200},
	} {
		body := ""
		if tc.method == "POST" {
			body = validExecute
		}
		rec := do(t, s, tc.method, tc.path, body, map[string]string{"Authorization": tc.auth})
		if rec.Code != tc.status {
			t.Errorf("%s with %q: %d, want %d", tc.path, tc.auth, rec.Code, tc.status)
		}
		if rec.Code == 401 {
			if e := errOf(t, rec); e.Code != CodeUnauthorized || strings.Contains(e.Message, token) {
				t.Errorf("401 body %+v", e)
			}
			if rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		}
	}
}

func TestRequestID(t *testing.T) {
	s, _ := newTestServer(t, nil)
	rec := do(t, s, "POST", "/execute", `{`, map[string]string{"X-Request-ID": "client-id_1"})
	if e := errOf(t, rec); e.RequestID != "client-id_1" {
		t.Errorf("request id %q, want the client's", e.RequestID)
	}
	rec = do(t, s, "POST", "/execute", `{`, map[string]string{"X-Request-ID": "bad id\" with spaces"})
	if e := errOf(t, rec); e.RequestID == "" || strings.Contains(e.RequestID, " ") {
		t.Errorf("request id %q, want a fresh one", e.RequestID)
	}
}

func TestPanicIsA500WithoutStack(t *testing.T) {
	logs := &bytes.Buffer{}
	s, fe := newTestServer(t, func(o *Options) { o.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	fe.panics = true
	rec := do(t, s, "POST", "/execute", validExecute, nil)
	if rec.Code != 500 {
		t.Fatalf("status %d", rec.Code)
	}
	e := errOf(t, rec)
	if e.Code != CodeInternal || strings.Contains(rec.Body.String(), "secret") || strings.Contains(rec.Body.String(), "goroutine") {
		t.Errorf("500 body leaks: %s", rec.Body)
	}
	if !strings.Contains(logs.String(), "goroutine") || !strings.Contains(logs.String(), e.RequestID) {
		t.Errorf("the stack and request id are not in the log: %s", logs)
	}
}

// TestQueue: with one slot, ten concurrent requests are all
// answered; with the slot busy and the queue full, the next is refused
// with 503 and Retry-After, and nothing accepted is dropped.
func TestQueue(t *testing.T) {
	s, fe := newTestServer(t, func(o *Options) { o.MaxConcurrent = 1; o.QueueSize = 10 })
	fe.hold = make(chan struct{})
	var wg sync.WaitGroup
	codes := make(chan int, 11)
	for i := range 11 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"execution_id":"q-%d","code":"x","language":"python"}`, i)
			req := httptest.NewRequest("POST", "/execute", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			codes <- rec.Code
		}()
	}
	<-fe.started // one runs
	// Wait until the other ten wait in the queue.
	for {
		if running, waiting := s.gate.counts(); running == 1 && waiting == 10 {
			break
		}
		runtimeGosched()
	}
	rec := do(t, s, "POST", "/execute", `{"execution_id":"over","code":"x","language":"python"}`, nil)
	if rec.Code != 503 || rec.Header().Get("Retry-After") == "" || errOf(t, rec).Code != CodeQueueFull {
		t.Errorf("over capacity: %d %s (Retry-After %q)", rec.Code, rec.Body, rec.Header().Get("Retry-After"))
	}
	h := do(t, s, "GET", "/health", "", nil)
	var hb health
	_ = json.Unmarshal(h.Body.Bytes(), &hb)
	if hb.ActiveExecutions != 1 || hb.QueuedExecutions != 10 {
		t.Errorf("health %+v", hb)
	}
	close(fe.hold)
	wg.Wait()
	close(codes)
	n := 0
	for c := range codes {
		if c != 200 {
			t.Errorf("a queued request got %d", c)
		}
		n++
	}
	if n != 11 || len(fe.runs) != 11 {
		t.Errorf("%d answers, %d runs, want 11 of each", n, len(fe.runs))
	}
}

func TestHealthLifecycle(t *testing.T) {
	fe := newFakeExecutor()
	s, err := New(Options{Executor: fe})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		step   func()
		status int
		state  string
	}{
		{func() {}, 503, "starting"},
		{s.SetReady, 200, "ok"},
		{func() { s.mu.Lock(); s.state = stateDraining; s.mu.Unlock() }, 503, "draining"},
	} {
		tc.step()
		rec := do(t, s, "GET", "/health", "", nil)
		var h health
		_ = json.Unmarshal(rec.Body.Bytes(), &h)
		if rec.Code != tc.status || h.Status != tc.state {
			t.Errorf("health %d %q, want %d %q", rec.Code, h.Status, tc.status, tc.state)
		}
		if tc.state != "ok" {
			rec := do(t, s, "POST", "/execute", validExecute, nil)
			if rec.Code != 503 {
				t.Errorf("/execute while %s: %d", tc.state, rec.Code)
			}
		}
	}
	if _, err := New(Options{}); err == nil {
		t.Error("New without an executor succeeded")
	}
}

func TestUnconfiguredEndpoints(t *testing.T) {
	s, _ := newTestServer(t, func(o *Options) { o.Runner = nil; o.Judge = nil })
	for _, tc := range []struct{ path, body string }{
		{"/v1/run", `{"language":"python","code":"x"}`},
		{"/v1/judge", `{"language":"python","code":"x","test_cases":[{"id":"1","expected_output":""}]}`},
	} {
		rec := do(t, s, "POST", tc.path, tc.body, nil)
		if rec.Code != 503 || errOf(t, rec).Code != CodeUnavailable {
			t.Errorf("%s: %d %s", tc.path, rec.Code, rec.Body)
		}
	}
}

func FuzzRunDecode(f *testing.F) {
	f.Add(`{"language":"python","code":"x","limits":{"time_limit":2}}`)
	f.Add(`{"code":1}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, body string) {
		var rr runRequest
		err := decodeJSON(strings.NewReader(body), &rr)
		if err == nil {
			return
		}
		field, _, ok := strings.Cut(err.Error(), ": ")
		if !ok || field == "" || strings.Contains(field, " ") {
			t.Errorf("error %q does not start with a field name", err)
		}
	})
}

// TestRunTypeErrorsNameTheField: a value of the wrong type in any field
// of the /v1/run body (those it shares with MCP's execute_code, which
// come from an embedded struct, among them) is refused naming the field
// as the client wrote it.
func TestRunTypeErrorsNameTheField(t *testing.T) {
	s, _ := newTestServer(t, nil)
	names := strictjson.Names(runRequest{})
	if !slices.Contains(names, "limits") || !slices.Contains(names, "session_id") {
		t.Fatalf("fields %v", names)
	}
	for _, name := range names {
		// No field of the body is a boolean; a repeated key's last value
		// is the one decoded.
		body := fmt.Sprintf(`{"language":"python","code":"x",%q:true}`, name)
		rec := do(t, s, "POST", "/v1/run", body, nil)
		if msg := errOf(t, rec).Message; rec.Code != 400 || !strings.HasPrefix(msg, name+": must be ") || !strings.HasSuffix(msg, ", not a JSON bool") {
			t.Errorf("%s: %d %s, want 400 naming %s", name, rec.Code, rec.Body, name)
		}
	}
	// Deeper, an element of an array is named by its index.
	for body, want := range map[string]string{
		`{"language":"python","code":"x","files":[{"path":"a","content":""},{"path":7,"content":""}]}`: "files[1].path: must be a string, not a JSON number",
		`{"language":"python","code":"x","limits":{"time_limit":"1s"}}`:                                "limits.time_limit: must be a number, not a JSON string",
		`{"language":"python","code":"x","args":["a",1]}`:                                              "args[1]: must be a string, not a JSON number",
		`["python"]`: "body: must be an object, not a JSON array",
	} {
		rec := do(t, s, "POST", "/v1/run", body, nil)
		if rec.Code != 400 || errOf(t, rec).Message != want {
			t.Errorf("%s: %d %s, want 400 %q", body, rec.Code, rec.Body, want)
		}
	}
}

// TestRequestCountsByRouteAndCode checks the request counter of each
// route and status code, which the middleware keeps once made: the same
// code on two routes, and two codes on one route, are counted apart, and
// every request is counted.
func TestRequestCountsByRouteAndCode(t *testing.T) {
	s, _ := newTestServer(t, nil)
	for range 3 {
		do(t, s, "GET", "/health", "", nil)
		do(t, s, "GET", "/openapi.yaml", "", nil)
	}
	for range 2 {
		do(t, s, "POST", "/health", "", nil)
		do(t, s, "GET", "/no/such/path", "", nil)
	}
	body := do(t, s, "GET", "/metrics", "", nil).Body.String()
	for _, want := range []string{
		`coderunner_http_requests_total{code="200",route="/health"} 3`,
		`coderunner_http_requests_total{code="200",route="/openapi.yaml"} 3`,
		`coderunner_http_requests_total{code="405",route="/health"} 2`,
		`coderunner_http_requests_total{code="404",route="other"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestJudgeTypeErrorsNameTheField: a value of the wrong type anywhere in a
// /v1/judge body, or in a line of /v1/judge/batch, is refused naming the
// field as the client wrote it, array elements by their index, never by
// the Go names of the types that decode it.
func TestJudgeTypeErrorsNameTheField(t *testing.T) {
	s, _ := newTestServer(t, nil)
	const head = `{"request_id":"r","language":"python","code":"print(1)",`
	cases := []struct{ body, msg string }{
		{head + `"timeout_ms":"5s","test_cases":[{"expected_output":"1"}]}`, "timeout_ms: must be an integer, not a JSON string"},
		{head + `"callback_url":7,"test_cases":[{"expected_output":"1"}]}`, "callback_url: must be a string, not a JSON number"},
		{head + `"test_cases":[{"expected_output":"1"},{"expected_output":"1"},{"input":3,"expected_output":"1"}]}`, "test_cases[2].input: must be a string, not a JSON number"},
		{head + `"test_cases":[{"expected_output":"1"},{"expected":true}]}`, "test_cases[1].expected: must be a string, not a JSON bool"},
		{head + `"test_cases":[{"expected_output":"1"},"1"]}`, "test_cases[1]: must be an object, not a JSON string"},
		{head + `"test_cases":[{"id":"a","expected_output":"1"}],"subtasks":[{"id":"s","points":1,"tests":["a",2]}]}`, "subtasks[0].tests[1]: must be a string, not a JSON number"},
		{head + `"test_cases":[{"expected_output":"1"}],"files":[{"path":"a","content":""},{"path":"b","content":{}}]}`, "files[1].content: must be a string, not a JSON object"},
		{head + `"test_cases":[{"expected_output":"1"}],"env":{"A":"1","B":false}}`, "env.B: must be a string, not a JSON bool"},
	}
	for _, tc := range cases {
		rec := do(t, s, "POST", "/v1/judge", tc.body, nil)
		if want := "invalid request: " + tc.msg; rec.Code != 400 || errOf(t, rec).Message != want {
			t.Errorf("%s: %d %s, want 400 %q", tc.body, rec.Code, rec.Body, want)
		}
	}

	var lines []string
	for _, tc := range cases[2:] {
		lines = append(lines, tc.body)
	}
	rec := do(t, s, "POST", "/v1/judge/batch", strings.Join(lines, "\n"), map[string]string{"Content-Type": "application/x-ndjson"})
	if rec.Code != 200 {
		t.Fatalf("batch: %d %s", rec.Code, rec.Body)
	}
	results := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
	for i, tc := range cases[2:] {
		if i >= len(results) {
			t.Fatalf("batch: %d results", len(results))
		}
		var r judge.ExecutionResult
		if json.Unmarshal([]byte(results[i]), &r) != nil || r.ErrorInfo == nil || r.ErrorInfo.Message != tc.msg {
			t.Errorf("batch line %d: %s, want %q", i+1, results[i], tc.msg)
		}
	}
}
