package httpapi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/execute"
)

// TestSlowBodyCut is the slow client attack: headers sent at once, then
// a body trickled a byte at a time for ever. The server must answer 408
// and close the connection once the read timeout passes, and hold no
// running slot or queue place for it.
func TestSlowBodyCut(t *testing.T) {
	s, ts := newMCPServer(t, func(o *Options) {
		o.ReadTimeout = 300 * time.Millisecond
		o.MaxConcurrent = 1
		o.QueueSize = 1
	})
	for _, path := range []string{"/v1/run", "/execute", "/v1/judge", "/mcp"} {
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		// Closed before the server (cleanups run last first), whose
		// Close waits for the request this connection holds.
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{", path)
		stop := make(chan struct{})
		trickled := make(chan struct{})
		go func() {
			defer close(trickled)
			// Bounded: 15 s at most, far beyond the read timeout.
			for range 750 {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
		// The bound is for the failure only: a server without the
		// timeout keeps the connection as long as the trickle lasts.
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: no answer to a slow body: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || (path != "/mcp" && !strings.Contains(string(body), CodeRequestTimeout)) {
			t.Errorf("%s: %d %s, want 408", path, resp.StatusCode, body)
		}
		// The server closed the connection: a read ends with EOF (or a
		// reset, the trickle still writing), not with our deadline.
		_, err = conn.Read(make([]byte, 1))
		if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: the connection is still open after the 408: %v", path, err)
		}
		close(stop)
		<-trickled
	}
	if running, waiting := s.gate.counts(); running != 0 || waiting != 0 {
		t.Errorf("slow bodies hold %d slots and %d queue places", running, waiting)
	}
	rec := do(t, s, "POST", "/v1/run", `{"language":"python","code":"print(1)"}`, nil)
	if rec.Code != 200 {
		t.Errorf("a request after the slow ones: %d %s", rec.Code, rec.Body)
	}
}

// slowRunner runs for d, unless its context ends first.
type slowRunner struct{ d time.Duration }

func (r slowRunner) Execute(ctx context.Context, req execute.Request) (*execute.Result, error) {
	select {
	case <-time.After(r.d):
		return &execute.Result{Stdout: "done\n", Status: execute.StatusSuccess, Language: req.Language, Backend: "fake"}, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("cancelled: %w", context.Cause(ctx))
	}
}

// TestLongRunOutlastsTimeouts: the read and write timeouts bound the
// body and each write, never the run: a run far longer than both is
// answered whole, over a kept-alive connection, twice.
func TestLongRunOutlastsTimeouts(t *testing.T) {
	s, _ := newTestServer(t, func(o *Options) {
		o.ReadTimeout = 100 * time.Millisecond
		o.WriteTimeout = 100 * time.Millisecond
		o.Runner = slowRunner{d: time.Second}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := s.Serve(ctx, ln); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	defer func() { cancel(); <-done }()
	for i := range 2 {
		resp, err := http.Post("http://"+ln.Addr().String()+"/v1/run", "application/json",
			strings.NewReader(`{"language":"python","code":"print(1)"}`))
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), "done") {
			t.Errorf("run %d longer than the timeouts: %d %s", i, resp.StatusCode, b)
		}
	}
}

// bigRunner answers with n bytes of stdout.
type bigRunner struct{ n int }

func (r bigRunner) Execute(_ context.Context, req execute.Request) (*execute.Result, error) {
	return &execute.Result{Stdout: strings.Repeat("y", r.n), Status: execute.StatusSuccess, Language: req.Language, Backend: "fake"}, nil
}

// TestSlowReaderCut is the other slow client: it sends its request and
// never reads the answer, which is larger than the socket buffers. The
// write timeout must end the handler, freeing its running slot, and
// close the connection.
func TestSlowReaderCut(t *testing.T) {
	s, _ := newTestServer(t, func(o *Options) {
		o.WriteTimeout = 300 * time.Millisecond
		o.MaxConcurrent = 1
		o.QueueSize = 1
		o.Runner = bigRunner{n: 32 << 20}
	})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	body := `{"language":"python","code":"print(1)"}`
	fmt.Fprintf(conn, "POST /v1/run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)

	// The handler counts its request once it returns. Bounded polling:
	// a server without the timeout stays blocked in the write for ever.
	finished := func() bool {
		rec := do(t, s, "GET", "/metrics", "", nil)
		return strings.Contains(rec.Body.String(), `coderunner_http_requests_total{code="200",route="/v1/run"} 1`)
	}
	for i := 0; !finished(); i++ {
		if i == 600 {
			t.Fatal("the handler is still writing to a client that reads nothing")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if running, waiting := s.gate.counts(); running != 0 || waiting != 0 {
		t.Errorf("the stalled answer holds %d slots and %d queue places", running, waiting)
	}
	// The connection was closed: reading now drains what the buffers
	// held, then ends, short of the whole answer.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	n, err := io.Copy(io.Discard, conn)
	if errors.Is(err, os.ErrDeadlineExceeded) || n >= 32<<20 {
		t.Errorf("read %d bytes, %v: want the connection closed before the whole answer", n, err)
	}
}
