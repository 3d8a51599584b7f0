package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/interp"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/session"
)

// interpServer is a server whose sessions run interpreters on the native
// backend.
func interpServer(tb testing.TB) *Server {
	tb.Helper()
	testutil.RequireRoot(tb)
	b, err := backend.Open(context.Background(), "native", backend.Options{Warm: 1})
	testutil.Require(tb, err == nil, "the native backend does not work here")
	if c, ok := b.(io.Closer); ok {
		tb.Cleanup(func() { _ = c.Close() })
	}
	l, _ := lang.Default().Lookup("python")
	tc := l.Discover(context.Background())
	testutil.Require(tb, tc.Available, "python is not available: "+tc.Reason)
	store, err := session.Open(session.Options{Dir: tb.TempDir(), MaxBytes: 16 * sandbox.MiB})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = store.Close() })
	ex := execute.New(b, lang.Default(), execute.Options{TempDir: tb.TempDir()})
	store.SetInterpreter(interp.New(ex, interp.Options{Backend: b.Name()}))
	s, err := New(Options{Executor: newFakeExecutor(), Runner: store.Wrap(ex), Sessions: store, Judge: fakeJudge{},
		Backend: "native", Version: "test", MaxConcurrent: 2, QueueSize: 10})
	if err != nil {
		tb.Fatal(err)
	}
	s.SetReady()
	return s
}

// TestNativeInterpreterOverHTTP is the interpreter mode of /v1/run: the
// state kept, value and display in the JSON (value null after a
// statement), the restart endpoint, and the refusals naming mode.
func TestNativeInterpreterOverHTTP(t *testing.T) {
	s := interpServer(t)
	cell := func(code string) map[string]any {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"language": "python", "code": code, "session_id": "nb", "mode": "interpreter"})
		rec := do(t, s, "POST", "/v1/run", string(body), nil)
		var res map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &res); rec.Code != 200 || err != nil {
			t.Fatalf("/v1/run: %d %s", rec.Code, rec.Body)
		}
		return res
	}
	if res := cell("x = 1"); res["value"] != nil || !hasKey(res, "value") || res["status"] != "success" {
		t.Fatalf("x = 1: %v", res)
	}
	cell("x += 1")
	if res := cell("x"); res["value"] != "2" || hasKey(res, "restarted") {
		t.Fatalf("x: %v", res)
	}
	if d, ok := cell("open('a.svg', 'w').write('<svg/>')")["display"].([]any); !ok || len(d) != 1 ||
		d[0].(map[string]any)["mime"] != "image/svg+xml" {
		t.Fatalf("display: %v", d)
	}
	if rec := do(t, s, "POST", "/v1/sessions/nb/restart", "", nil); rec.Code != 204 {
		t.Fatalf("restart: %d %s", rec.Code, rec.Body)
	}
	if res := cell("'x' in dir()"); res["value"] != "False" {
		t.Fatalf("after restart: %v", res)
	}
	if rec := do(t, s, "POST", "/v1/sessions/none/restart", "", nil); rec.Code != 404 {
		t.Fatalf("restart of no session: %d %s", rec.Code, rec.Body)
	}
	// A run without the mode has no value.
	body := `{"language":"python","code":"print(1)","session_id":"nb"}`
	if rec := do(t, s, "POST", "/v1/run", body, nil); rec.Code != 200 || strings.Contains(rec.Body.String(), `"value"`) {
		t.Fatalf("a plain run: %d %s", rec.Code, rec.Body)
	}
	for _, body := range []string{
		`{"language":"python","code":"1","mode":"interpreter"}`,
		`{"language":"python","code":"1","session_id":"nb","mode":"shell"}`,
		`{"language":"c","code":"1","session_id":"nb","mode":"interpreter"}`,
		`{"language":"python","code":"1","session_id":"nb","mode":"interpreter","stdin":"x"}`,
	} {
		rec := do(t, s, "POST", "/v1/run", body, nil)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), "mode: ") {
			t.Errorf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
}

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }

// TestNativeInterpreterCallLatency measures the p50 of `x += 1` over a
// loopback HTTP connection, the interpreter already started; the README's
// figure. It reports the numbers, it asserts none.
func TestNativeInterpreterCallLatency(t *testing.T) {
	s := interpServer(t)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	post := func(code string) {
		body := `{"language":"python","code":` + strconvQuote(code) + `,"session_id":"lat","mode":"interpreter"}`
		req, _ := http.NewRequest("POST", ts.URL+"/v1/run", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"status":"success"`) {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	}
	start := time.Now()
	post("x = 0")
	t.Logf("the first cell, which starts the interpreter: %v", time.Since(start))
	var d []time.Duration
	for range 200 {
		start := time.Now()
		post("x += 1")
		d = append(d, time.Since(start))
	}
	slices.Sort(d)
	t.Logf("x += 1 over HTTP, %d calls: p50 %v, p90 %v, p99 %v", len(d), d[len(d)/2], d[len(d)*9/10], d[len(d)*99/100])
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestNativeInterpreterStream: a cell's output streams as it runs (what
// it prints before it sleeps is an event before the result), and the
// result event carries the value.
func TestNativeInterpreterStream(t *testing.T) {
	s := interpServer(t)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	body, _ := json.Marshal(map[string]any{"language": "python", "session_id": "st", "mode": "interpreter",
		"code": "import time\nprint('first', flush=True)\ntime.sleep(0.2)\nprint('second')\n6 * 7"})
	sr := streamOf(t, postRun(t, context.Background(), ts.URL, string(body), "text/event-stream"))
	first, _ := sr.next(t)
	if first.name != "stdout" || first.text(t) != "first\n" {
		t.Fatalf("first event %+v, want stdout \"first\\n\" alone", first)
	}
	out, _, res := collect(t, sr)
	if res.Value == nil || *res.Value != "42" || res.Stdout != "first\nsecond\n" || "first\n"+out["stdout"] != res.Stdout {
		t.Fatalf("result %+v, streamed %q", res, out["stdout"])
	}
}
