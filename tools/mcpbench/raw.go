package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// rawClient calls execute_code over the streamable HTTP transport as
// plainly as a client can: HTTP/1.1 written by hand on one kept-alive
// connection, the answer parsed by net/http's reader in the same
// goroutine, checked for the output. Set beside the SDK's client on the
// same server, it shows what that client costs, and against the Go API
// what the server adds. (net/http's own client hands each request and
// answer between goroutines, about 0.2 ms a call after a sandboxed run.)
type rawClient struct {
	addr    string // host:port
	path    string
	session string
	conn    net.Conn
	br      *bufio.Reader
	req     []byte
}

const (
	rawInitialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcpbench-raw","version":"1"}}}`
	rawInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	rawCall        = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print('hello')"}}}`
)

// serveRaw serves h on a loopback port and opens a session on it with
// rawClient.
func serveRaw(ctx context.Context, h http.Handler) (*rawClient, func(), error) {
	url, stop, err := listen(h)
	if err != nil {
		return nil, nil, err
	}
	c, err := openRaw(ctx, url)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return c, func() { c.close(); stop() }, nil
}

// openRaw opens a session with rawClient on the MCP endpoint at url.
func openRaw(ctx context.Context, url string) (*rawClient, error) {
	c, err := dialRaw(url)
	if err != nil {
		return nil, err
	}
	header, err := c.post(ctx, rawInitialize)
	if err != nil {
		c.close()
		return nil, err
	}
	c.session = header.Get("Mcp-Session-Id")
	if _, err := c.post(ctx, rawInitialized); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// dialRaw connects to the server of url (http://host:port/path).
func dialRaw(url string) (*rawClient, error) {
	rest, ok := strings.CutPrefix(url, "http://")
	if !ok {
		return nil, fmt.Errorf("%s: only http:// URLs", url)
	}
	addr, path, _ := strings.Cut(rest, "/")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &rawClient{addr: addr, path: "/" + path, conn: conn, br: bufio.NewReader(conn)}, nil
}

func (c *rawClient) close() { _ = c.conn.Close() }

// post sends body and returns the response's header, its body read and
// checked.
func (c *rawClient) post(ctx context.Context, body string) (http.Header, error) {
	if deadline, ok := ctx.Deadline(); ok {
		_ = c.conn.SetDeadline(deadline)
	}
	c.req = append(c.req[:0], "POST "...)
	c.req = append(c.req, c.path...)
	c.req = append(c.req, " HTTP/1.1\r\nHost: "...)
	c.req = append(c.req, c.addr...)
	c.req = append(c.req, "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-06-18\r\n"...)
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
		return nil, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s: %s", resp.Status, data)
	}
	if strings.HasPrefix(body, `{"jsonrpc":"2.0","id":2`) && !bytes.Contains(data, []byte(`hello\n`)) {
		return nil, fmt.Errorf("unexpected response %s", data)
	}
	if wall := executionTime(data); wall >= 0 {
		reportWall(ctx, wall)
	}
	return resp.Header, nil
}

func (c *rawClient) call(ctx context.Context) error {
	_, err := c.post(ctx, rawCall)
	return err
}

// floorHandler answers every request with a canned tools/call result, the
// size of the real one, for the round trip of HTTP alone.
func floorHandler() http.Handler {
	body := []byte(`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"success: hello\n"}],"structuredContent":{"stdout":"hello\n","stderr":"","status":"success"}}}`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// listen serves h on a loopback port.
func listen(h http.Handler) (url string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Println("mcpbench: serving:", err)
		}
	}()
	return "http://" + l.Addr().String(), func() { _ = hs.Close() }, nil
}

// rawStdio calls execute_code over stdio with plain line reads and
// writes, no MCP client library: beside the SDK's client on the same
// kind of server, it shows what that client costs.
type rawStdio struct {
	proc *piped
	out  *bufio.Reader
	id   int
}

// startRawStdio starts `bin mcp` and opens a session on it.
func startRawStdio(bin string) (_ *rawStdio, err error) {
	proc, err := startPiped(nil, bin, "mcp")
	if err != nil {
		return nil, err
	}
	c := &rawStdio{proc: proc, out: bufio.NewReaderSize(proc.out, 64<<10), id: 100}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	if _, err := c.exchange(rawInitialize, true); err != nil {
		return nil, err
	}
	if _, err := c.exchange(rawInitialized, false); err != nil {
		return nil, err
	}
	return c, nil
}

// exchange writes one line and, when an answer is due, reads one.
func (c *rawStdio) exchange(msg string, answered bool) ([]byte, error) {
	if _, err := io.WriteString(c.proc.in, msg+"\n"); err != nil {
		return nil, err
	}
	if !answered {
		return nil, nil
	}
	line, err := c.out.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("coderunner mcp: %w", err)
	}
	return line, nil
}

func (c *rawStdio) call(ctx context.Context) error {
	c.id++
	msg := strings.Replace(rawCall, `"id":2`, `"id":`+strconv.Itoa(c.id), 1)
	line, err := c.exchange(msg, true)
	if err != nil {
		return err
	}
	if !bytes.Contains(line, []byte(`"id":`+strconv.Itoa(c.id)+`,`)) || !bytes.Contains(line, []byte(`hello\n`)) {
		return fmt.Errorf("unexpected response %s", line)
	}
	if wall := executionTime(line); wall >= 0 {
		reportWall(ctx, wall)
	}
	return nil
}

// stop ends the server.
func (c *rawStdio) stop() { c.proc.stop() }
