package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/mcpserver"
)

// benchToken is the API token of the MCP benchmarks: a deployment off
// loopback has one, and its check is part of every call.
const benchToken = "bench-token-0123456789abcdef"

// newMCPBenchServer is /mcp as coderunner serve mounts it (the token
// check, the Host check, request ids, a JSON log line per request at
// info, metrics, the running slots), on a runner that answers at once.
func newMCPBenchServer(tb testing.TB) *httptest.Server {
	tb.Helper()
	s, err := New(Options{Executor: newFakeExecutor(), Runner: fakeRunner{}, APIToken: benchToken,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		MCP: func(run Runner) (http.Handler, error) {
			ms, err := mcpserver.New(mcpserver.Options{Runner: run, Languages: lang.Default(), Version: "test"})
			if err != nil {
				return nil, err
			}
			return ms.Handler(), nil
		}})
	if err != nil {
		tb.Fatal(err)
	}
	s.SetReady()
	ts := httptest.NewServer(s.Handler())
	tb.Cleanup(ts.Close)
	return ts
}

// rawMCP is an MCP client that writes HTTP/1.1 by hand on one kept-alive
// connection and reads the answer in the same goroutine: what it costs
// besides the server is as little as a client can spend.
type rawMCP struct {
	tb      testing.TB
	host    string
	session string
	conn    net.Conn
	br      *bufio.Reader
	req     []byte
}

func dialMCP(tb testing.TB, url string) *rawMCP {
	tb.Helper()
	host := strings.TrimPrefix(url, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	c := &rawMCP{tb: tb, host: host, conn: conn, br: bufio.NewReader(conn)}
	resp, _ := c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	c.session = resp.Header.Get("Mcp-Session-Id")
	if c.session == "" {
		tb.Fatalf("initialize: no session id, status %s", resp.Status)
	}
	if resp, _ := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		tb.Fatalf("initialized: status %s", resp.Status)
	}
	return c
}

// rawAnswer is a response to rawMCP, its body read and closed.
type rawAnswer struct {
	StatusCode       int
	Status           string
	Header           http.Header
	ContentLength    int64
	TransferEncoding []string
	Close            bool
}

// post sends one message and returns the response and its body.
func (c *rawMCP) post(body string) (rawAnswer, []byte) {
	c.req = append(c.req[:0], "POST /mcp HTTP/1.1\r\nHost: "...)
	c.req = append(c.req, c.host...)
	c.req = append(c.req, "\r\nAuthorization: Bearer "+benchToken+"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-06-18\r\n"...)
	if c.session != "" {
		c.req = append(c.req, "Mcp-Session-Id: "...)
		c.req = append(c.req, c.session...)
		c.req = append(c.req, "\r\n"...)
	}
	c.req = append(c.req, "Content-Length: "...)
	c.req = strconv.AppendInt(c.req, int64(len(body)), 10)
	c.req = append(c.req, "\r\n\r\n"...)
	c.req = append(c.req, body...)
	if _, err := c.conn.Write(c.req); err != nil {
		c.tb.Fatal(err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.tb.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		c.tb.Fatal(err)
	}
	return rawAnswer{StatusCode: resp.StatusCode, Status: resp.Status, Header: resp.Header,
		ContentLength: resp.ContentLength, TransferEncoding: resp.TransferEncoding, Close: resp.Close}, data
}

const benchCall = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print(1)"}}}`

// BenchmarkMCPOverHTTP is one execute_code call to /mcp behind the whole
// middleware, on a kept-alive loopback connection, with a runner that
// answers at once. "plain" is the server's work and a minimal client's,
// "sdk" the official Go SDK's client on the same server.
func BenchmarkMCPOverHTTP(b *testing.B) {
	ts := newMCPBenchServer(b)
	b.Run("plain", func(b *testing.B) {
		c := dialMCP(b, ts.URL)
		b.ReportAllocs()
		before := cpuTime()
		for b.Loop() {
			resp, data := c.post(benchCall)
			if resp.StatusCode != http.StatusOK || !bytes.Contains(data, []byte(`out\n`)) {
				b.Fatalf("%s %s", resp.Status, data)
			}
		}
		reportCPU(b, before)
	})
	b.Run("sdk", func(b *testing.B) {
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{benchToken, http.DefaultTransport}}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		args := map[string]any{"language": "python", "code": "print(1)"}
		b.ReportAllocs()
		before := cpuTime()
		for b.Loop() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.ToolExecuteCode, Arguments: args})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
		reportCPU(b, before)
	})
}

// cpuTime is the CPU time the process used so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per call, client and server together,
// since before: on a machine other work shares, it tells more than the
// wall time.
func reportCPU(b *testing.B, before time.Duration) {
	b.ReportMetric(float64(cpuTime()-before)/float64(b.N), "cpu-ns/op")
}
