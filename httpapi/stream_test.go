package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/session"
)

// sseEvent is one server-sent event; a comment line is an event named
// ":" whose data is the comment.
type sseEvent struct {
	name, data string
}

// sseReader reads the events of a stream one by one.
type sseReader struct {
	br *bufio.Reader
}

func (r *sseReader) next(t *testing.T) (sseEvent, bool) {
	t.Helper()
	var ev sseEvent
	for {
		line, err := r.br.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" && ev.name == "" {
				return ev, false
			}
			t.Fatalf("reading the stream: %v (line %q)", err, line)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev.name != "" {
				return ev, true
			}
		case strings.HasPrefix(line, ":"):
			return sseEvent{name: ":", data: strings.TrimSpace(line[1:])}, true
		case strings.HasPrefix(line, "event: "):
			ev.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			if ev.data != "" {
				t.Fatalf("an event with two data lines: %q then %q", ev.data, line)
			}
			ev.data = line[len("data: "):]
		default:
			t.Fatalf("not a line of an event stream: %q", line)
		}
	}
}

// text decodes a stdout or stderr event's data.
func (ev sseEvent) text(t *testing.T) string {
	t.Helper()
	var s string
	if err := json.Unmarshal([]byte(ev.data), &s); err != nil {
		t.Fatalf("%s event data %q is not a JSON string: %v", ev.name, ev.data, err)
	}
	return s
}

// streamServer serves the API with run as its runner on a real listener,
// so that events reach the client as they are sent.
func streamServer(t *testing.T, run runnerFunc, edit func(*Server)) (*Server, *httptest.Server) {
	t.Helper()
	s, _ := newTestServer(t, func(o *Options) { o.Runner = run })
	if edit != nil {
		edit(s)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

// answer is a response whose body the test's cleanup closes.
type answer struct {
	StatusCode int
	Header     http.Header
	Body       io.Reader
}

// postRun posts body to /v1/run with the Accept header given.
func postRun(t *testing.T, ctx context.Context, url, body, accept string) *answer {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/run", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return &answer{StatusCode: resp.StatusCode, Header: resp.Header, Body: resp.Body}
}

func streamOf(t *testing.T, resp *answer) *sseReader {
	t.Helper()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("answer %d %q (Cache-Control %q): %s", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), b)
	}
	return &sseReader{br: bufio.NewReader(resp.Body)}
}

// runResult is what a streamed runner answers.
func runResult(req execute.Request, stdout, stderr string) *execute.Result {
	return &execute.Result{Stdout: stdout, Stderr: stderr, Status: execute.StatusSuccess, Language: req.Language, Backend: "fake",
		LimitsApplied: execute.LimitsApplied{TimeLimitSeconds: req.Limits.WithDefaults().TimeLimit}}
}

const pythonRun = `{"language":"python","code":"print(1)"}`

// TestStreamEventsAsWritten: the first chunk is an event before the
// program writes its second (the runner waits for the client to have
// it), stderr has its own events, and the result comes last.
func TestStreamEventsAsWritten(t *testing.T) {
	seen := make(chan struct{})
	_, ts := streamServer(t, func(ctx context.Context, req execute.Request) (*execute.Result, error) {
		_, _ = io.WriteString(req.Stdout, "first <line> & more\n")
		select {
		case <-seen:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		_, _ = io.WriteString(req.Stderr, "warning\n")
		_, _ = io.WriteString(req.Stdout, "second\n")
		return runResult(req, "first <line> & more\nsecond\n", "warning\n"), nil
	}, nil)
	sr := streamOf(t, postRun(t, context.Background(), ts.URL, pythonRun, "text/event-stream"))
	ev, _ := sr.next(t)
	if ev.name != "stdout" || ev.text(t) != "first <line> & more\n" {
		t.Fatalf("first event %+v", ev)
	}
	close(seen)
	var names []string
	var stdout, stderr string
	for {
		ev, ok := sr.next(t)
		if !ok {
			t.Fatal("the stream ended without a result event")
		}
		names = append(names, ev.name)
		switch ev.name {
		case "stdout":
			stdout += ev.text(t)
			continue
		case "stderr":
			stderr += ev.text(t)
			continue
		}
		if ev.name != "result" {
			t.Fatalf("event %+v", ev)
		}
		var res execute.Result
		if err := json.Unmarshal([]byte(ev.data), &res); err != nil || res.Stdout != "first <line> & more\nsecond\n" {
			t.Fatalf("result %q: %v", ev.data, err)
		}
		break
	}
	if stderr != "warning\n" || stdout != "second\n" || names[0] != "stderr" {
		t.Errorf("events %v: stdout %q stderr %q", names, stdout, stderr)
	}
	if ev, ok := sr.next(t); ok {
		t.Errorf("an event after the result: %+v", ev)
	}
}

// TestStreamResultIsTheJSONAnswer: the result event's data is the body
// the same request gets without the header, and matches the document.
func TestStreamResultIsTheJSONAnswer(t *testing.T) {
	_, ts := streamServer(t, func(ctx context.Context, req execute.Request) (*execute.Result, error) {
		if req.Stdout != nil {
			_, _ = io.WriteString(req.Stdout, "out\n")
		}
		res := runResult(req, "out\n", "")
		res.ErrorMessage = new(string)
		*res.ErrorMessage = "a <b> & c"
		return res, nil
	}, nil)
	plain := postRun(t, context.Background(), ts.URL, pythonRun, "")
	body, _ := io.ReadAll(plain.Body)
	if plain.StatusCode != 200 || plain.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("JSON answer %d %s", plain.StatusCode, body)
	}
	sr := streamOf(t, postRun(t, context.Background(), ts.URL, pythonRun, "application/json;q=0.5, text/event-stream"))
	var last sseEvent
	for {
		ev, ok := sr.next(t)
		if !ok {
			break
		}
		last = ev
	}
	if last.name != "result" || last.data+"\n" != string(body) {
		t.Fatalf("result event %q\nJSON answer  %q", last.data, body)
	}
	checkSchema(t, "result event", []byte(last.data), map[string]any{"$ref": "#/components/schemas/RunResult"})
}

// TestStreamAccept: only an Accept header that takes an event stream
// gets one.
func TestStreamAccept(t *testing.T) {
	for _, tc := range []struct {
		accept string
		want   bool
	}{
		{"text/event-stream", true},
		{"application/json, text/event-stream", true},
		{"TEXT/EVENT-STREAM; charset=utf-8", true},
		{"text/event-stream;q=0", false},
		{"text/event-stream;q=bad", false},
		{"application/json", false},
		{"*/*", false},
		{"", false},
	} {
		r := httptest.NewRequest("POST", "/v1/run", nil)
		if tc.accept != "" {
			r.Header.Set("Accept", tc.accept)
		}
		if got := wantsEventStream(r); got != tc.want {
			t.Errorf("Accept %q: stream %v, want %v", tc.accept, got, tc.want)
		}
	}
}

// TestStreamRefusedBeforeStart: a request refused before any event keeps
// its status code and JSON error.
func TestStreamRefusedBeforeStart(t *testing.T) {
	_, ts := streamServer(t, func(ctx context.Context, req execute.Request) (*execute.Result, error) {
		return nil, session.ErrExpired
	}, nil)
	for _, tc := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"language":"python","code":""}`, 400, CodeBadRequest},
		{`{"language":"python","code":"x","limits":{"memory_limit":1}}`, 400, CodeBadRequest},
		{`{"language":"python","code":"x","session_id":"s1"}`, 404, CodeSessionExpired},
	} {
		resp := postRun(t, context.Background(), ts.URL, tc.body, "text/event-stream")
		var eb errorBody
		err := json.NewDecoder(resp.Body).Decode(&eb)
		if resp.StatusCode != tc.status || err != nil || eb.Error.Code != tc.code || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q %+v (%v), want %d %s", tc.body, resp.StatusCode, resp.Header.Get("Content-Type"), eb, err, tc.status, tc.code)
		}
	}
}

// TestStreamKeepAliveAndLateRefusal: a silent run gets keep-alive
// comments, and a refusal after the stream started is its result event:
// a setup_error result carrying the error object.
func TestStreamKeepAliveAndLateRefusal(t *testing.T) {
	alive := make(chan struct{})
	_, ts := streamServer(t, func(ctx context.Context, req execute.Request) (*execute.Result, error) {
		select {
		case <-alive:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: the server holds its most sessions", session.ErrTooManySessions)
	}, func(s *Server) { s.heartbeat = time.Millisecond })
	sr := streamOf(t, postRun(t, context.Background(), ts.URL, `{"language":"python","code":"x","session_id":"s1"}`, "text/event-stream"))
	ev, _ := sr.next(t)
	if ev.name != ":" || ev.data != "keep-alive" {
		t.Fatalf("first event %+v, want a keep-alive", ev)
	}
	close(alive)
	for ev.name == ":" {
		ev, _ = sr.next(t)
	}
	if ev.name != "result" {
		t.Fatalf("event %+v, want the result", ev)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(ev.data), &m); err != nil {
		t.Fatal(err)
	}
	detail := m["error"]
	delete(m, "error")
	rest, _ := json.Marshal(m)
	checkSchema(t, "refusal result", rest, map[string]any{"$ref": "#/components/schemas/RunResult"})
	checkSchema(t, "refusal error", []byte(`{"error":`+string(detail)+`}`), map[string]any{"$ref": "#/components/schemas/Error"})
	var res execute.Result
	var d errorDetail
	_ = json.Unmarshal(rest, &res)
	_ = json.Unmarshal(detail, &d)
	if res.Status != execute.StatusSetupError || res.ExitCode != execute.ExitSetupError || d.Code != CodeTooManySessions ||
		!strings.Contains(res.Message(), "session_id") || res.Message() != d.Message || d.RequestID == "" {
		t.Errorf("refusal %s", ev.data)
	}
}

// TestStreamClientGoneCancelsRun: a client that closes the stream stops
// the run.
func TestStreamClientGoneCancelsRun(t *testing.T) {
	cancelled := make(chan error, 1)
	_, ts := streamServer(t, func(ctx context.Context, req execute.Request) (*execute.Result, error) {
		_, _ = io.WriteString(req.Stdout, "started\n")
		<-ctx.Done()
		cancelled <- ctx.Err()
		return nil, ctx.Err()
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	sr := streamOf(t, postRun(t, ctx, ts.URL, pythonRun, "text/event-stream"))
	if ev, _ := sr.next(t); ev.name != "stdout" {
		t.Fatalf("first event %+v", ev)
	}
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("the run ended with %v", err)
	}
}

// TestStreamUTF8 : a character the program wrote in two pieces arrives
// whole, and bytes that are not UTF-8 read as U+FFFD, as in the result.
func TestStreamUTF8(t *testing.T) {
	_, ts := streamServer(t, func(ctx context.Context, req execute.Request) (*execute.Result, error) {
		for _, piece := range []string{"caf", "\xc3", "\xa9 ", "\xff", "!"} {
			_, _ = io.WriteString(req.Stdout, piece)
		}
		return runResult(req, "caf\xc3\xa9 \xff!", ""), nil
	}, nil)
	sr := streamOf(t, postRun(t, context.Background(), ts.URL, pythonRun, "text/event-stream"))
	var got string
	for {
		ev, ok := sr.next(t)
		if !ok || ev.name == "result" {
			var res execute.Result
			_ = json.Unmarshal([]byte(ev.data), &res)
			if got != "café \uFFFD!" || res.Stdout != got {
				t.Errorf("streamed %q, result %q", got, res.Stdout)
			}
			return
		}
		got += ev.text(t)
	}
}

// TestStreamContract: the event stream is an answer the document
// describes (checkContract: its status and Content-Type), and a run with
// no output is its result event alone.
func TestStreamContract(t *testing.T) {
	s, _ := newTestServer(t, nil)
	rec := do(t, s, "POST", "/v1/run", pythonRun, map[string]string{"Accept": "text/event-stream"})
	sr := &sseReader{br: bufio.NewReader(rec.Body)}
	ev, _ := sr.next(t)
	if rec.Code != 200 || ev.name != "result" {
		t.Fatalf("answer %d, first event %+v", rec.Code, ev)
	}
	checkSchema(t, "result event", []byte(ev.data), map[string]any{"$ref": "#/components/schemas/RunResult"})
	if ev, ok := sr.next(t); ok {
		t.Errorf("an event after the result: %+v", ev)
	}
}

// TestStreamStalledClientCancelsRun: a client that keeps its connection
// open but stops reading is cut once a write waits for the write timeout,
// and its run is stopped; the program's writes never block meanwhile.
func TestStreamStalledClientCancelsRun(t *testing.T) {
	cause := make(chan error, 1)
	s, _ := newTestServer(t, func(o *Options) {
		o.WriteTimeout = 200 * time.Millisecond
		o.Runner = runnerFunc(func(ctx context.Context, req execute.Request) (*execute.Result, error) {
			line := strings.Repeat("z", 1<<16)
			// Bounded: 125 MiB over 2 s at least, far beyond what the
			// socket's buffers take and the 200 ms write timeout.
			for range 2000 {
				if ctx.Err() != nil {
					cause <- context.Cause(ctx)
					return nil, ctx.Err()
				}
				_, _ = io.WriteString(req.Stdout, line)
				time.Sleep(time.Millisecond)
			}
			cause <- nil
			return runResult(req, "", ""), nil
		})
	})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /v1/run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		len(pythonRun), pythonRun)
	// Never read. The failed write cancels the run, and so does the
	// server once it has closed the connection: either cause may be first.
	if err := <-cause; err == nil {
		t.Error("the run went on to its end for a client that stopped reading")
	}
}
