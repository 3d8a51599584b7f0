package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestCheckLoopbackURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://127.0.0.1:5050", "http://127.0.0.1:5050"},
		{"http://127.0.0.1:5050/", "http://127.0.0.1:5050"},
		{"http://127.3.4.5:1", "http://127.3.4.5:1"},
		{"http://[::1]:8080", "http://[::1]:8080"},
	} {
		got, err := checkLoopbackURL(c.in)
		if err != nil || got != c.want {
			t.Errorf("checkLoopbackURL(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{
		"", "127.0.0.1:5050", "https://127.0.0.1:5050", "http://localhost:5050",
		"http://10.0.0.1:5050", "http://0.0.0.0:5050", "http://127.0.0.1", "http://127.0.0.1:",
		"http://user:pw@127.0.0.1:5050", "http://127.0.0.1:5050/run", "http://127.0.0.1:5050?x=1",
		"http://127.0.0.1.evil.example:5050", "http://[::ffff:10.0.0.1]:80", "ftp://127.0.0.1:21",
	} {
		if got, err := checkLoopbackURL(in); err == nil {
			t.Errorf("checkLoopbackURL(%q) = %q, want an error", in, got)
		}
	}
}

func TestShare(t *testing.T) {
	for _, c := range []struct{ n, rounds int }{{100, 10}, {7, 3}, {5, 10}, {0, 4}, {1, 1}, {23, 23}} {
		sum, prev := 0, 1<<30
		for r := range c.rounds {
			k := share(c.n, c.rounds, r)
			if k > prev || k < 0 {
				t.Errorf("share(%d, %d, %d) = %d after %d: not spread evenly, earlier rounds first", c.n, c.rounds, r, k, prev)
			}
			if hi := (c.n + c.rounds - 1) / c.rounds; k > hi {
				t.Errorf("share(%d, %d, %d) = %d, more than %d", c.n, c.rounds, r, k, hi)
			}
			sum += k
			prev = k
		}
		if sum != c.n {
			t.Errorf("share(%d, %d, ·) sums to %d", c.n, c.rounds, sum)
		}
	}
	if share(10, 0, 0) != 0 || share(10, 3, 3) != 0 || share(10, 3, -1) != 0 {
		t.Error("share outside the rounds is not 0")
	}
}

func TestParseGJResults(t *testing.T) {
	ok := `[{"status":"Accepted","exitStatus":0,"time":1,"memory":2,"runTime":3,"files":{"stdout":"hello\n","stderr":""},"fileIds":{"a":"ABC"}}]`
	rs, err := parseGJResults([]byte(ok), 1)
	if err != nil || rs[0].Files["stdout"] != "hello\n" || rs[0].FileIDs["a"] != "ABC" {
		t.Fatalf("parseGJResults(ok) = %+v, %v", rs, err)
	}
	for _, c := range []struct{ name, body, want string }{
		{"count", ok[:len(ok)-1] + `,` + ok[1:], "2 results, want 1"},
		{"status", `[{"status":"Nonzero Exit Status","exitStatus":1,"files":{"stderr":"boom"}}]`, `"Nonzero Exit Status", exit 1, error "", stderr "boom"`},
		{"internal", `[{"status":"Internal Error","error":"no fd"}]`, `error "no fd"`},
		{"not json", `"bad request"`, "go-judge /run:"},
		{"empty", ``, "go-judge /run:"},
	} {
		_, err := parseGJResults([]byte(c.body), 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func TestCheckCRRun(t *testing.T) {
	if err := checkCRRun([]byte(`{"status":"success","stdout":"1\n","exit_code":0}`), "1\n"); err != nil {
		t.Errorf("a success with the output: %v", err)
	}
	for _, body := range []string{
		`{"status":"success","stdout":"2\n"}`,
		`{"status":"execution_error","stdout":"1\n","exit_code":127}`,
		`{"status":"timeout","stdout":""}`,
		`{"error":{"code":"BAD_REQUEST"}}`,
		`not json`,
	} {
		if err := checkCRRun([]byte(body), "1\n"); err == nil {
			t.Errorf("checkCRRun(%s) accepted it", body)
		}
	}
}

func TestCheckCRJudge(t *testing.T) {
	if err := checkCRJudge([]byte(`{"status":"all_passed","test_results":[{},{}]}`), 2); err != nil {
		t.Errorf("all passed: %v", err)
	}
	for _, body := range []string{
		`{"status":"all_passed","test_results":[{}]}`,
		`{"status":"some_passed","test_results":[{},{}]}`,
		`{"status":"compilation_error","test_results":[],"compilation_output":"error"}`,
		`{}`, `[`,
	} {
		if err := checkCRJudge([]byte(body), 2); err == nil {
			t.Errorf("checkCRJudge(%s) accepted it", body)
		}
	}
}

func TestJudgeProgram(t *testing.T) {
	in, out := judgeTest(7)
	if in != "7 8\n" || out != "15\n" {
		t.Errorf("judgeTest(7) = %q, %q", in, out)
	}
	a, b := judgeSource(1), judgeSource(2)
	if a == b || !strings.HasSuffix(a, sumC) || !strings.HasSuffix(b, sumC) {
		t.Errorf("judgeSource: not a new source around the same program: %q, %q", a, b)
	}
}

func TestTimesAndCPU(t *testing.T) {
	for _, c := range []struct {
		a, b float64
		want string
	}{{3, 2, "1.50x"}, {1, 4, "0.25x"}, {0, 2, "-"}, {2, 0, "-"}, {-1, 2, "-"}} {
		if got := times(c.a, c.b); got != c.want {
			t.Errorf("times(%v, %v) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
	if cpuMS(-time.Millisecond) != "-" || cpuMS(0) != "-" || cpuMS(1500*time.Microsecond) != "1.50" {
		t.Error("cpuMS")
	}
}

func TestPrintPeers(t *testing.T) {
	ok := func() error { return nil }
	rows := []*peerRow{{name: "trivial", n: 2, runs: []func() error{ok, nil, ok}, errs: []error{nil, errMissing, nil}},
		{name: "python", n: 2, runs: []func() error{ok, ok, ok}, errs: make([]error, 3)}}
	c := func(ms ...int) cell {
		var cl cell
		for _, m := range ms {
			cl.lat = append(cl.lat, time.Duration(m)*time.Millisecond)
		}
		cl.runs, cl.elapsed = 4, time.Second
		return cl
	}
	cells := [][]cell{{c(4, 6), {}, c(1, 2)}, {c(10, 20), c(20, 40), c(5, 5)}}
	var b bytes.Buffer
	printPeers(&b, rows, cells, cell{}, 10, time.Second)
	out := b.String()
	for _, want := range []string{
		"go-judge        unavailable: missing",
		"python                               cr/gj",
		"0.50x", // p50 10 ms against 20
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "trivial                              cr/gj") {
		t.Errorf("a ratio to go-judge where go-judge did not run:\n%s", out)
	}
}

var errMissing = stringError("missing")

type stringError string

func (e stringError) Error() string { return string(e) }

// fakeGoJudge answers /run and DELETE /file/ID as go-judge does, checking
// that requests have the shape its REST API documents.
func fakeGoJudge(t *testing.T) (*httptest.Server, *[]string) {
	var deleted []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/run":
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var req struct {
				Cmd []struct {
					Args          []string                     `json:"args"`
					Env           []string                     `json:"env"`
					Files         []map[string]json.RawMessage `json:"files"`
					CPULimit      int64                        `json:"cpuLimit"`
					MemoryLimit   int64                        `json:"memoryLimit"`
					ProcLimit     int                          `json:"procLimit"`
					CopyIn        map[string]map[string]string `json:"copyIn"`
					CopyOutCached []string                     `json:"copyOutCached"`
				} `json:"cmd"`
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Cmd) != 1 {
				http.Error(w, `"bad request"`, http.StatusBadRequest)
				return
			}
			c := req.Cmd[0]
			if len(c.Files) != 3 || c.Files[1]["name"] == nil || c.CPULimit != 10e9 || c.MemoryLimit != 256<<20 || c.ProcLimit != 64 || len(c.Env) == 0 {
				t.Errorf("command without the common limits and streams: %+v", c)
			}
			var res map[string]any
			switch {
			case len(c.CopyOutCached) == 1:
				if c.Args[0] != "/usr/bin/gcc" || c.CopyIn["a.c"]["content"] == "" {
					t.Errorf("compile command %+v", c)
				}
				res = map[string]any{"status": "Accepted", "files": map[string]string{"stdout": "", "stderr": ""}, "fileIds": map[string]string{"a": "ID1"}}
			case c.CopyIn["a"]["fileId"] == "ID1":
				var stdin string
				_ = json.Unmarshal(c.Files[0]["content"], &stdin)
				res = map[string]any{"status": "Accepted", "files": map[string]string{"stdout": "out:" + stdin, "stderr": ""}}
			default:
				res = map[string]any{"status": "Nonzero Exit Status", "exitStatus": 2, "files": map[string]string{"stderr": "no such file"}}
			}
			_ = json.NewEncoder(w).Encode([]any{res})
		case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/file/"):
			deleted = append(deleted, strings.TrimPrefix(r.URL.Path, "/file/"))
			w.WriteHeader(http.StatusOK)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &deleted
}

func TestGoJudgeClient(t *testing.T) {
	srv, deleted := fakeGoJudge(t)
	c := newPeerClient(srv.URL)
	id, err := c.gjCompile(helloC)
	if err != nil || id != "ID1" {
		t.Fatalf("gjCompile = %q, %v", id, err)
	}
	if _, err := c.gjRun(newGJCmd([]string{"a"}, "7 8\n", map[string]gjFile{"a": {FileID: id}}), "out:7 8\n"); err != nil {
		t.Errorf("a run of the cached binary: %v", err)
	}
	if _, err := c.gjRun(newGJCmd([]string{"a"}, "7 8\n", map[string]gjFile{"a": {FileID: id}}), "15\n"); err == nil {
		t.Error("a wrong output was accepted")
	}
	if _, err := c.gjRun(newGJCmd([]string{"a"}, "", map[string]gjFile{"a": {FileID: "OTHER"}}), ""); err == nil || !strings.Contains(err.Error(), "Nonzero Exit Status") {
		t.Errorf("a failed command: %v", err)
	}
	if err := c.gjDelete(id); err != nil || len(*deleted) != 1 || (*deleted)[0] != "ID1" {
		t.Errorf("gjDelete: %v, deleted %v", err, *deleted)
	}
	if _, err := c.do(http.MethodGet, "/nothing", nil, http.StatusOK); err == nil || !strings.Contains(err.Error(), "status 404") {
		t.Errorf("a 404 answer: %v", err)
	}
}

func TestPeerClientBoundsAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/big", http.StatusFound)
			return
		}
		_, _ = w.Write(bytes.Repeat([]byte("x"), maxAnswer+1))
	}))
	defer srv.Close()
	c := newPeerClient(srv.URL)
	if _, err := c.do(http.MethodGet, "/big", nil, http.StatusOK); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("an answer over the limit: %v", err)
	}
	if _, err := c.do(http.MethodGet, "/redirect", nil, http.StatusOK); err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Errorf("a redirect: %v", err)
	}
}
