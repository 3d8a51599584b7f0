package httpapi

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/mcpserver"
)

// countingListener counts the connections it accepts and the writes made
// on them.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
	writes   atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.accepted.Add(1)
	return &countingConn{Conn: c, writes: &l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// startCounted serves /mcp as coderunner serve mounts it on a listener
// that counts connections and writes.
func startCounted(t *testing.T) (*httptest.Server, *countingListener) {
	t.Helper()
	ts := newMCPBenchServer(t)
	// newMCPBenchServer started it; serve the same handler again on a
	// counting listener.
	h := ts.Config.Handler
	ts.Close()
	ts = httptest.NewUnstartedServer(h)
	cl := &countingListener{Listener: ts.Listener}
	ts.Listener = cl
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, cl
}

// TestMCPAnswerIsOneWrite checks how a call's answer leaves /mcp behind
// the middleware: in one write to the connection (headers and body
// together, flushed once), with a Content-Length and without chunked
// encoding, on a connection that stays open for the next call.
func TestMCPAnswerIsOneWrite(t *testing.T) {
	ts, cl := startCounted(t)
	c := dialMCP(t, ts.URL)
	for i := range 5 {
		before := cl.writes.Load()
		resp, data := c.post(benchCall)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d: %s %s", i, resp.Status, data)
		}
		// The handler returns after the answer has gone; its writes, if
		// any, would come before the next request is read.
		resp2, _ := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		if resp2.StatusCode != http.StatusAccepted {
			t.Fatalf("notification: %s", resp2.Status)
		}
		if n := cl.writes.Load() - before; n != 2 {
			t.Errorf("call %d: %d writes for a call and a notification, want one each", i, n)
		}
		if len(resp.TransferEncoding) != 0 || resp.ContentLength != int64(len(data)) {
			t.Errorf("call %d: Transfer-Encoding %v, Content-Length %d for %d bytes", i, resp.TransferEncoding, resp.ContentLength, len(data))
		}
		if resp.Close || resp.Header.Get("Content-Length") != strconv.Itoa(len(data)) {
			t.Errorf("call %d: Connection close %v, Content-Length header %q", i, resp.Close, resp.Header.Get("Content-Length"))
		}
	}
	if n := cl.accepted.Load(); n != 1 {
		t.Errorf("%d connections, want the one kept alive", n)
	}
}

// TestMCPSDKClientKeepsItsConnection checks that the official Go SDK's
// client makes its calls on connections kept alive: once connected, a
// call opens no new one.
func TestMCPSDKClientKeepsItsConnection(t *testing.T) {
	ts, cl := startCounted(t)
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{benchToken, &http.Transport{}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolExecuteCode,
			Arguments: map[string]any{"language": "python", "code": "print(1)"}})
		if err != nil || res.IsError {
			t.Fatal(err, res)
		}
	}
	call()
	opened := cl.accepted.Load()
	for range 10 {
		call()
	}
	if n := cl.accepted.Load() - opened; n != 0 {
		t.Errorf("10 calls opened %d new connections, want none", n)
	}
}
