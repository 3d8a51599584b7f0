package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/coderunner/coderunner/execute"
)

const wsToken = "ws-token"

// wsServer serves a test server whose runner is run, with an API token.
func wsServer(t *testing.T, run runnerFunc, edit func(*Options)) *httptest.Server {
	t.Helper()
	s, _ := newTestServer(t, func(o *Options) {
		o.Runner = run
		o.APIToken = wsToken
		if edit != nil {
			edit(o)
		}
	})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// wsDial opens /v1/run/ws with header (the token when nil). status is
// the handshake's HTTP status.
func wsDial(t *testing.T, ts *httptest.Server, header http.Header) (c *websocket.Conn, status int, err error) {
	t.Helper()
	if header == nil {
		header = http.Header{"Authorization": {"Bearer " + wsToken}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/v1/run/ws", &websocket.DialOptions{HTTPHeader: header})
	if resp != nil {
		status = resp.StatusCode
		if resp.Body != nil {
			_ = resp.Body.Close()
		}
	}
	if c != nil {
		c.SetReadLimit(64 << 20)
		t.Cleanup(func() { _ = c.CloseNow() })
	}
	return c, status, err
}

// wsOpen dials and sends the run request v.
func wsOpen(t *testing.T, ts *httptest.Server, v any) *websocket.Conn {
	t.Helper()
	c, _, err := wsDial(t, ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	wsSend(t, c, v)
	return c
}

func wsSend(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(context.Background(), websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// serverMessage is a message from the server, its result left raw.
type serverMessage struct {
	Type   string          `json:"type"`
	Data   string          `json:"data"`
	Result json.RawMessage `json:"result"`
	Error  *errorDetail    `json:"error"`
}

// wsNext reads the next message; ok is false once the connection is
// closed, err then telling how.
func wsNext(t *testing.T, c *websocket.Conn) (m serverMessage, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	typ, b, err := c.Read(ctx)
	if err != nil {
		return m, err
	}
	if typ != websocket.MessageText {
		t.Fatalf("a message of type %v", typ)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("message %q: %v", b, err)
	}
	return m, nil
}

// wsUntil reads output until stdout holds want, and returns it.
func wsUntil(t *testing.T, c *websocket.Conn, want string) string {
	t.Helper()
	var out string
	for !strings.Contains(out, want) {
		m, err := wsNext(t, c)
		if err != nil {
			t.Fatalf("waiting for %q, got %q then %v", want, out, err)
		}
		if m.Type != "stdout" {
			t.Fatalf("waiting for %q: a %s message %+v", want, m.Type, m)
		}
		out += m.Data
	}
	return out
}

// wsEnd reads the rest: the output, the last message (result or error)
// and the close status.
func wsEnd(t *testing.T, c *websocket.Conn) (out map[string]string, last serverMessage, status websocket.StatusCode) {
	t.Helper()
	out = map[string]string{}
	for {
		m, err := wsNext(t, c)
		if err != nil {
			return out, last, websocket.CloseStatus(err)
		}
		switch m.Type {
		case "stdout", "stderr":
			out[m.Type] += m.Data
		default:
			if last.Type != "" {
				t.Fatalf("a %s message after the %s message", m.Type, last.Type)
			}
			last = m
		}
	}
}

// echoRunner answers each line of its input in upper case, as a program
// would, and ends at the input's end.
func echoRunner(_ context.Context, req execute.Request) (*execute.Result, error) {
	if req.StdinReader == nil {
		return nil, errors.New("no stdin reader")
	}
	// As the executor does: the request's stdin, then the client's.
	sc := bufio.NewScanner(io.MultiReader(strings.NewReader(req.Stdin), req.StdinReader))
	n := 0
	for sc.Scan() {
		n++
		if _, err := io.WriteString(req.Stdout, strings.ToUpper(sc.Text())+"\n"); err != nil {
			return nil, err
		}
	}
	return &execute.Result{Status: execute.StatusSuccess, Stdout: "lines " + string(rune('0'+n)), Language: req.Language}, nil
}

// TestInteractiveEcho: a line sent is answered before the next is sent;
// the request's own stdin comes first; eof ends the program, whose result
// is the last message before a normal close.
func TestInteractiveEcho(t *testing.T) {
	ts := wsServer(t, echoRunner, nil)
	c := wsOpen(t, ts, map[string]any{"language": "python", "code": "x", "stdin": "first\n"})
	if got := wsUntil(t, c, "FIRST\n"); got != "FIRST\n" {
		t.Fatalf("stdout %q", got)
	}
	for _, line := range []string{"hello", "world"} {
		wsSend(t, c, map[string]any{"type": "stdin", "data": line + "\n"})
		if got := wsUntil(t, c, strings.ToUpper(line)+"\n"); got != strings.ToUpper(line)+"\n" {
			t.Fatalf("stdout %q", got)
		}
	}
	wsSend(t, c, map[string]any{"type": "eof"})
	out, last, status := wsEnd(t, c)
	if len(out) != 0 || last.Type != "result" || status != websocket.StatusNormalClosure {
		t.Fatalf("output %q, last %+v, close %v", out, last, status)
	}
	var res execute.Result
	if err := json.Unmarshal(last.Result, &res); err != nil || res.Stdout != "lines 3" || res.Status != execute.StatusSuccess {
		t.Fatalf("result %s (%v)", last.Result, err)
	}
}

// TestInteractiveFiles: an interactive run is the program its request
// names, as on /v1/run: its files, its entry and the artifacts' options
// reach the run, none of them dropped.
func TestInteractiveFiles(t *testing.T) {
	got := make(chan execute.Request, 1)
	ts := wsServer(t, func(ctx context.Context, req execute.Request) (*execute.Result, error) {
		got <- req
		return &execute.Result{Status: execute.StatusSuccess, Language: req.Language}, nil
	}, nil)
	c := wsOpen(t, ts, map[string]any{"language": "python", "entry": "main.py",
		"files": []any{
			map[string]any{"path": "main.py", "content": "import helper\n"},
			map[string]any{"path": "helper.py", "content": "print(input())\n"},
		},
		"artifacts": map[string]any{"include_content": true, "max_bytes": 100},
	})
	if _, last, status := wsEnd(t, c); last.Type != "result" || status != websocket.StatusNormalClosure {
		t.Fatalf("last %+v, close %v", last, status)
	}
	req := <-got
	if len(req.Files) != 2 || req.Files[0].Path != "main.py" || req.Files[1].Path != "helper.py" || req.Entry != "main.py" ||
		req.Artifacts != (execute.ArtifactOptions{IncludeContent: true, MaxBytes: 100}) {
		t.Fatalf("files %+v, entry %q, artifacts %+v", req.Files, req.Entry, req.Artifacts)
	}
}

// TestInteractiveHandshakeRefused: without the token, with a wrong one,
// and from a foreign web page the handshake is refused over HTTP and no
// run starts.
func TestInteractiveHandshakeRefused(t *testing.T) {
	var runs atomic.Int32
	ts := wsServer(t, func(ctx context.Context, req execute.Request) (*execute.Result, error) {
		runs.Add(1)
		return echoRunner(ctx, req)
	}, nil)
	cases := []struct {
		name   string
		header http.Header
		status int
	}{
		{"no token", http.Header{}, http.StatusUnauthorized},
		{"wrong token", http.Header{"Authorization": {"Bearer nope"}}, http.StatusUnauthorized},
		{"foreign origin", http.Header{"Authorization": {"Bearer " + wsToken}, "Origin": {"https://attacker.example"}}, http.StatusForbidden},
		{"null origin", http.Header{"Authorization": {"Bearer " + wsToken}, "Origin": {"null"}}, http.StatusForbidden},
	}
	for _, tc := range cases {
		c, status, err := wsDial(t, ts, tc.header)
		if err == nil || c != nil || status != tc.status {
			t.Errorf("%s: connected %v, status %d, want %d", tc.name, c != nil, status, tc.status)
		}
	}
	// The server's own origin is welcome.
	u := ts.URL
	c, _, err := wsDial(t, ts, http.Header{"Authorization": {"Bearer " + wsToken}, "Origin": {u}})
	if err != nil {
		t.Fatalf("own origin: %v", err)
	}
	wsSend(t, c, map[string]any{"language": "python", "code": "x"})
	wsSend(t, c, map[string]any{"type": "eof"})
	if _, last, status := wsEnd(t, c); last.Type != "result" || status != websocket.StatusNormalClosure {
		t.Fatalf("own origin: last %+v, close %v", last, status)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("%d runs, want the one of the own origin", n)
	}
}

// TestInteractiveBadMessages: a broken run request is refused with an
// error message and a policy close before any run; a broken message
// during the run ends it the same way.
func TestInteractiveBadMessages(t *testing.T) {
	var runs atomic.Int32
	ended := make(chan error, 16)
	ts := wsServer(t, func(ctx context.Context, req execute.Request) (*execute.Result, error) {
		if req.Language != "python" {
			return fakeRunner{}.Execute(ctx, req)
		}
		runs.Add(1)
		_, err := io.Copy(io.Discard, req.StdinReader)
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return nil, err
	}, nil)
	before := []struct {
		name string
		typ  websocket.MessageType
		msg  string
		code string
	}{
		{"not json", websocket.MessageText, "{", CodeBadRequest},
		{"unknown field", websocket.MessageText, `{"language":"python","code":"x","lang":"c"}`, CodeBadRequest},
		{"binary", websocket.MessageBinary, `{"language":"python","code":"x"}`, CodeBadRequest},
		{"empty code", websocket.MessageText, `{"language":"python","code":""}`, CodeBadRequest},
		{"unknown language", websocket.MessageText, `{"language":"cobol","code":"x"}`, CodeBadRequest},
		{"two documents", websocket.MessageText, `{"language":"python","code":"x"}{}`, CodeBadRequest},
		{"interpreter mode", websocket.MessageText, `{"language":"python","code":"x","session_id":"a","mode":"interpreter"}`, CodeBadRequest},
		{"file leaving the workspace", websocket.MessageText, `{"language":"python","code":"x","files":[{"path":"../x","content":""}]}`, CodeBadRequest},
		{"artifacts out of range", websocket.MessageText, `{"language":"python","code":"x","artifacts":{"max_bytes":-1}}`, CodeBadRequest},
	}
	for _, tc := range before {
		c, _, err := wsDial(t, ts, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Write(context.Background(), tc.typ, []byte(tc.msg)); err != nil {
			t.Fatal(err)
		}
		out, last, status := wsEnd(t, c)
		if len(out) != 0 || last.Type != "error" || last.Error == nil || last.Error.Code != tc.code || last.Error.Message == "" ||
			status != websocket.StatusPolicyViolation {
			t.Errorf("%s: output %q, last %+v, close %v", tc.name, out, last, status)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("%d runs of refused requests", n)
	}

	during := []struct {
		name string
		msgs []string
		want string
	}{
		{"unknown type", []string{`{"type":"stdout","data":"x"}`}, `message type "stdout"`},
		{"stdin without data", []string{`{"type":"stdin"}`}, "needs"},
		{"unknown field", []string{`{"type":"stdin","data":"x","more":1}`}, "more"},
		{"stdin after eof", []string{`{"type":"eof"}`, `{"type":"stdin","data":"x"}`}, "after eof"},
		{"eof twice", []string{`{"type":"eof"}`, `{"type":"eof"}`}, "eof after eof"},
		{"data not a string", []string{`{"type":"stdin","data":5}`}, "data"},
	}
	for _, tc := range during {
		c := wsOpen(t, ts, map[string]any{"language": "python", "code": "x"})
		for _, m := range tc.msgs {
			if err := c.Write(context.Background(), websocket.MessageText, []byte(m)); err != nil {
				t.Fatal(err)
			}
		}
		_, last, status := wsEnd(t, c)
		if last.Type != "error" || last.Error == nil || last.Error.Code != CodeBadRequest ||
			!strings.Contains(last.Error.Message, tc.want) || status != websocket.StatusPolicyViolation {
			t.Errorf("%s: last %+v, close %v", tc.name, last, status)
		}
		if cause := <-ended; cause == nil {
			t.Errorf("%s: the run ended without a cause", tc.name)
		}
	}
}

// TestInteractiveStdinCaps: a message over the message cap closes with
// 1009; stdin over the total cap (the body cap when lower than
// execute.MaxStdinBytes) ends the run with an error message.
func TestInteractiveStdinCaps(t *testing.T) {
	ended := make(chan error, 4)
	const bodyCap = 3 << 20
	ts := wsServer(t, func(ctx context.Context, req execute.Request) (*execute.Result, error) {
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return nil, ctx.Err()
	}, func(o *Options) { o.MaxBodyBytes = bodyCap })

	c := wsOpen(t, ts, map[string]any{"language": "python", "code": "x"})
	big := strings.Repeat("a", MaxInteractiveMessageBytes)
	wsSend(t, c, map[string]any{"type": "stdin", "data": big})
	if _, last, status := wsEnd(t, c); last.Type != "" || status != websocket.StatusMessageTooBig {
		t.Fatalf("a message over the cap: last %+v, close %v", last, status)
	}
	if cause := <-ended; !errors.Is(cause, errClientGone) {
		t.Fatalf("cause %v", cause)
	}

	// The request's stdin counts toward the total, the body cap's.
	c = wsOpen(t, ts, map[string]any{"language": "python", "code": "x", "stdin": strings.Repeat("b", 1000)})
	chunk := strings.Repeat("a", MaxInteractiveMessageBytes/2)
	sent := 1000
	for sent+len(chunk) <= bodyCap {
		wsSend(t, c, map[string]any{"type": "stdin", "data": chunk})
		sent += len(chunk)
	}
	wsSend(t, c, map[string]any{"type": "stdin", "data": chunk})
	_, last, status := wsEnd(t, c)
	if last.Type != "error" || last.Error == nil || !strings.Contains(last.Error.Message, fmt.Sprintf("stdin is too large: more than %d bytes", bodyCap)) ||
		status != websocket.StatusPolicyViolation {
		t.Fatalf("stdin over the total cap: last %+v, close %v", last, status)
	}
	if cause := <-ended; cause == nil || !strings.Contains(cause.Error(), "stdin is too large") {
		t.Fatalf("cause %v", cause)
	}
}

// TestInteractiveClientGone: a client that leaves mid-run cancels it.
func TestInteractiveClientGone(t *testing.T) {
	started := make(chan struct{})
	ended := make(chan error, 1)
	ts := wsServer(t, func(ctx context.Context, req execute.Request) (*execute.Result, error) {
		_, _ = io.WriteString(req.Stdout, "ready\n")
		close(started)
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return nil, ctx.Err()
	}, nil)
	c := wsOpen(t, ts, map[string]any{"language": "python", "code": "x"})
	wsUntil(t, c, "ready\n")
	<-started
	_ = c.CloseNow()
	if cause := <-ended; !errors.Is(cause, errClientGone) {
		t.Fatalf("cause %v, want the client's leaving", cause)
	}
}

// TestInteractiveFirstMessageTimeout: a client that never sends its run
// request is told so and closed once the read timeout passes.
func TestInteractiveFirstMessageTimeout(t *testing.T) {
	ts := wsServer(t, echoRunner, func(o *Options) { o.ReadTimeout = 50 * time.Millisecond })
	c, _, err := wsDial(t, ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, last, status := wsEnd(t, c)
	if last.Type != "error" || last.Error == nil || last.Error.Code != CodeRequestTimeout || status != websocket.StatusPolicyViolation {
		t.Fatalf("last %+v, close %v", last, status)
	}
}

// TestInteractiveQueueFull: with every slot and queue place taken, the
// run is refused with queue_full and a try-again-later close.
func TestInteractiveQueueFull(t *testing.T) {
	release := make(chan struct{})
	s, _ := newTestServer(t, func(o *Options) {
		o.APIToken = wsToken
		o.MaxConcurrent, o.QueueSize = 1, 1
		o.Runner = runnerFunc(func(ctx context.Context, req execute.Request) (*execute.Result, error) {
			_, _ = io.WriteString(req.Stdout, "busy\n")
			<-release
			return &execute.Result{Status: execute.StatusSuccess}, nil
		})
	})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	busy := wsOpen(t, ts, map[string]any{"language": "python", "code": "x"})
	wsUntil(t, busy, "busy\n")
	queued := wsOpen(t, ts, map[string]any{"language": "python", "code": "x"})
	for {
		if _, waiting := s.gate.counts(); waiting == 1 {
			break
		}
		runtimeGosched()
	}
	c := wsOpen(t, ts, map[string]any{"language": "python", "code": "x"})
	_, last, status := wsEnd(t, c)
	close(release)
	if last.Type != "error" || last.Error == nil || last.Error.Code != CodeQueueFull || status != websocket.StatusTryAgainLater {
		t.Fatalf("last %+v, close %v", last, status)
	}
	for _, c := range []*websocket.Conn{busy, queued} {
		if _, last, status := wsEnd(t, c); last.Type != "result" || status != websocket.StatusNormalClosure {
			t.Fatalf("a run admitted: last %+v, close %v", last, status)
		}
	}
}

// TestInteractiveUnansweredPing: a client that no longer answers pings
// (it stopped reading) has its quiet run cancelled.
func TestInteractiveUnansweredPing(t *testing.T) {
	ended := make(chan error, 1)
	s, _ := newTestServer(t, func(o *Options) {
		o.APIToken = wsToken
		o.Runner = runnerFunc(func(ctx context.Context, req execute.Request) (*execute.Result, error) {
			<-ctx.Done()
			ended <- context.Cause(ctx)
			return nil, ctx.Err()
		})
	})
	s.heartbeat = 20 * time.Millisecond
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	// The client never reads: its side answers no ping.
	wsOpen(t, ts, map[string]any{"language": "python", "code": "x"})
	if cause := <-ended; !errors.Is(cause, errClientUnheard) {
		t.Fatalf("cause %v, want the unanswered ping", cause)
	}
}

// TestInteractivePingAnswered: a quiet run whose client reads (and so
// answers pings) goes on past many heartbeats, to its result.
func TestInteractivePingAnswered(t *testing.T) {
	s, _ := newTestServer(t, func(o *Options) {
		o.APIToken = wsToken
		o.Runner = runnerFunc(echoRunner)
	})
	s.heartbeat = 5 * time.Millisecond
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	c := wsOpen(t, ts, map[string]any{"language": "python", "code": "x"})
	done := make(chan struct{})
	var last serverMessage
	var status websocket.StatusCode
	go func() {
		defer close(done)
		_, last, status = wsEnd(t, c)
	}()
	for _, line := range []string{"a", "b", "c", "d", "e"} {
		// Each pause spans several heartbeats.
		time.Sleep(30 * time.Millisecond)
		wsSend(t, c, map[string]any{"type": "stdin", "data": line + "\n"})
	}
	wsSend(t, c, map[string]any{"type": "eof"})
	<-done
	if last.Type != "result" || status != websocket.StatusNormalClosure {
		t.Fatalf("last %+v, close %v", last, status)
	}
}

// TestInteractiveNotAHandshake: requests that are no WebSocket handshake
// this server speaks, and pages of other sites (or names, by DNS
// rebinding), are answered over HTTP with a documented JSON error.
func TestInteractiveNotAHandshake(t *testing.T) {
	s, _ := newTestServer(t, func(o *Options) {
		o.Runner = runnerFunc(func(context.Context, execute.Request) (*execute.Result, error) {
			t.Error("a run started")
			return nil, errors.New("no run")
		})
	})
	hs := map[string]string{"Connection": "keep-alive, Upgrade", "Upgrade": "WebSocket",
		"Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range hs {
			h[a] = b
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	cases := []struct {
		name   string
		host   string
		header map[string]string
		status int
	}{
		{"plain GET", "127.0.0.1:8080", nil, http.StatusUpgradeRequired},
		{"no Upgrade", "127.0.0.1:8080", with("Upgrade", ""), http.StatusUpgradeRequired},
		{"other Upgrade", "127.0.0.1:8080", with("Upgrade", "h2c"), http.StatusUpgradeRequired},
		{"no Connection upgrade", "127.0.0.1:8080", with("Connection", "keep-alive"), http.StatusUpgradeRequired},
		{"old version", "127.0.0.1:8080", with("Sec-WebSocket-Version", "8"), http.StatusBadRequest},
		{"no key", "127.0.0.1:8080", with("Sec-WebSocket-Key", ""), http.StatusBadRequest},
		{"short key", "127.0.0.1:8080", with("Sec-WebSocket-Key", "c2hvcnQ="), http.StatusBadRequest},
		{"foreign Host", "attacker.example", hs, http.StatusForbidden},
		{"foreign Origin", "127.0.0.1:8080", with("Origin", "https://attacker.example"), http.StatusForbidden},
	}
	for _, tc := range cases {
		rec := doAt(t, s, loopbackAddr, tc.host, http.MethodGet, "/v1/run/ws", "", tc.header)
		if rec.Code != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body, tc.status)
		}
		checkContract(t, http.MethodGet, "/v1/run/ws", rec)
	}
	rec := doAt(t, s, loopbackAddr, "127.0.0.1:8080", http.MethodPost, "/v1/run/ws", "", hs)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
	checkContract(t, http.MethodPost, "/v1/run/ws", rec)
}

// TestInteractiveRequestTooLarge: a run request over the body cap closes
// the connection with 1009 and runs nothing.
func TestInteractiveRequestTooLarge(t *testing.T) {
	var runs atomic.Int32
	ts := wsServer(t, func(ctx context.Context, req execute.Request) (*execute.Result, error) {
		runs.Add(1)
		return echoRunner(ctx, req)
	}, func(o *Options) { o.MaxBodyBytes = 1000 })
	c := wsOpen(t, ts, map[string]any{"language": "python", "code": strings.Repeat("#", 1000)})
	if _, last, status := wsEnd(t, c); last.Type != "" || status != websocket.StatusMessageTooBig {
		t.Fatalf("last %+v, close %v", last, status)
	}
	// Just under the cap is taken.
	c = wsOpen(t, ts, map[string]any{"language": "python", "code": strings.Repeat("#", 900)})
	wsSend(t, c, map[string]any{"type": "eof"})
	if _, last, status := wsEnd(t, c); last.Type != "result" || status != websocket.StatusNormalClosure {
		t.Fatalf("under the cap: last %+v, close %v", last, status)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("%d runs", n)
	}
}
