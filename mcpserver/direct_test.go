package mcpserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineClient drives a Server over LineTransport with hand-written lines.
type lineClient struct {
	t       testing.TB
	send    io.WriteCloser
	answers *bufio.Reader
}

func newLineClient(t testing.TB, s *Server) *lineClient {
	t.Helper()
	serverRead, clientWrite := io.Pipe()
	clientRead, serverWrite := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Run(context.Background(), &LineTransport{Reader: serverRead, Writer: serverWrite})
	}()
	t.Cleanup(func() {
		_ = clientWrite.Close()
		go func() { _, _ = io.Copy(io.Discard, clientRead) }()
		<-done
	})
	return &lineClient{t: t, send: clientWrite, answers: bufio.NewReader(clientRead)}
}

// exchange sends a line and, for a call, returns the answer line.
func (c *lineClient) exchange(line string, answered bool) string {
	c.t.Helper()
	if _, err := io.WriteString(c.send, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
	if !answered {
		return ""
	}
	answer, err := c.answers.ReadString('\n')
	if err != nil {
		c.t.Fatal(err)
	}
	return strings.TrimSpace(answer)
}

// countSDKCalls counts the tools/call requests that reach the SDK's
// server: the ones the transport did not answer itself.
func countSDKCalls(s *Server) *atomic.Int64 {
	var n atomic.Int64
	s.MCP().AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == methodCallTool {
				n.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	return &n
}

// directArguments are execute_code arguments of every kind: each is sent
// once as the transport answers it and once as the SDK does, and the two
// answers must be the same bytes.
var directArguments = []string{
	`{"language":"python","code":"print hi"}`,
	`{"language":"python","code":"print <a&b> \"q\""}`,
	`{"language":"python","code":"fail"}`,
	`{"language":"python","code":"broken"}`,
	`{"language":"python","code":"refuse"}`,
	`{"language":"cobol","code":"x"}`,
	`{"language":"python","code":"  "}`,
	`{"language":5,"code":"x"}`,
	`{"language":"python","code":"x","bogus":1}`,
	`{"language":"python","code":"x","timeout":0}`,
	`{"language":"python","code":"x","timeout":5,"memory_limit":64,"session_id":"s-1","stdin":"in"}`,
	`{"language":"python","code":"x","session_id":"../etc"}`,
	`{"language":"python","code":"x"} `,
	`null`,
	`"text"`,
	`[1]`,
	``,
}

// TestDirectCallsAnswerAsTheSDK sends each kind of execute_code call
// over each transport twice: plain, which the transport answers itself,
// and with an empty _meta, which only the SDK answers. The answers must
// be the same, and the middleware must have seen only the second.
func TestDirectCallsAnswerAsTheSDK(t *testing.T) {
	params := func(args string, meta bool) string {
		p := `"name":"execute_code"`
		if args != "" {
			p += `,"arguments":` + args
		}
		if meta {
			p += `,"_meta":{}`
		}
		return "{" + p + "}"
	}
	for _, tr := range []string{"pipe", "http"} {
		t.Run(tr, func(t *testing.T) {
			s, _ := newServer(t)
			sdkCalls := countSDKCalls(s)
			var call func(id int, params string) string
			switch tr {
			case "pipe":
				c := newLineClient(t, s)
				c.exchange(initializeBody, true)
				c.exchange(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false)
				call = func(id int, params string) string {
					return c.exchange(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params), true)
				}
			case "http":
				rs := &rawServer{t: t, h: s.NewHTTPHandler(HTTPOptions{})}
				t.Cleanup(func() { _ = rs.h.Close() })
				session := rs.open()
				call = func(id int, params string) string {
					rec := rs.do(http.MethodPost, session, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params), nil)
					if rec.Code != http.StatusOK {
						t.Fatalf("status %d: %s", rec.Code, rec.Body)
					}
					return rec.Body.String()
				}
			}
			for i, args := range directArguments {
				direct := call(100+i, params(args, false))
				viaSDK := call(100+i, params(args, true))
				if direct != viaSDK {
					t.Errorf("arguments %s:\n direct %s\n SDK    %s", args, direct, viaSDK)
				}
				if !strings.HasPrefix(direct, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,`, 100+i)) {
					t.Errorf("arguments %s: answer %s", args, direct)
				}
			}
			if got := sdkCalls.Load(); got != int64(len(directArguments)) {
				t.Errorf("the SDK answered %d calls, want only the %d with _meta", got, len(directArguments))
			}
		})
	}
}

// TestDirectCallsLeaveTheRestToTheSDK checks what the transport does not
// answer: a call before initialize (which the SDK refuses), another
// tool, parameters with another field, a progress token, and a batch.
func TestDirectCallsLeaveTheRestToTheSDK(t *testing.T) {
	s, _ := newServer(t)
	sdkCalls := countSDKCalls(s)
	c := newLineClient(t, s)
	early := c.exchange(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print hi"}}}`, true)
	if !strings.Contains(early, "invalid during session initialization") {
		t.Errorf("a call before initialize: %s", early)
	}
	c.exchange(strings.Replace(initializeBody, `"id":1`, `"id":2`, 1), true)
	c.exchange(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false)
	before := sdkCalls.Load()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_languages","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print hi"},"other":1}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print hi"},"_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
	} {
		if answer := c.exchange(line, true); !strings.Contains(answer, `"id":`) {
			t.Errorf("%s: %s", line, answer)
		}
	}
	if got := sdkCalls.Load() - before; got != 4 {
		t.Errorf("the SDK answered %d of the 4 calls it alone may answer", got)
	}
}

// TestDirectCallCancelled cancels a running call taken by the transport
// with a notification, over each transport: the call's context ends, and
// the answer is the error the SDK gives a cancelled call.
func TestDirectCallCancelled(t *testing.T) {
	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"block"}}}`
	const cancel = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}`
	const want = `{"jsonrpc":"2.0","id":7,"error":{"code":0,"message":"context canceled"}}`
	t.Run("pipe", func(t *testing.T) {
		s, fr := newServer(t)
		c := newLineClient(t, s)
		c.exchange(initializeBody, true)
		c.exchange(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false)
		c.exchange(call, false)
		<-fr.started
		c.exchange(cancel, false)
		<-fr.canceled
		if answer, err := c.answers.ReadString('\n'); strings.TrimSpace(answer) != want {
			t.Errorf("answer %q, %v; want %s", answer, err, want)
		}
	})
	t.Run("http", func(t *testing.T) {
		s, fr := newServer(t)
		rs := &rawServer{t: t, h: s.NewHTTPHandler(HTTPOptions{})}
		t.Cleanup(func() { _ = rs.h.Close() })
		session := rs.open()
		answered := make(chan string, 1)
		go func() { answered <- rs.do(http.MethodPost, session, call, nil).Body.String() }()
		<-fr.started
		rs.do(http.MethodPost, session, cancel, nil)
		<-fr.canceled
		if answer := <-answered; answer != want {
			t.Errorf("answer %s, want %s", answer, want)
		}
	})
}

// TestDirectCallIDReused makes calls one after another with the same id,
// as a client may once it has an answer: the id must be free by then.
func TestDirectCallIDReused(t *testing.T) {
	s, _ := newServer(t)
	c := newLineClient(t, s)
	c.exchange(initializeBody, true)
	c.exchange(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false)
	for range 50 {
		answer := c.exchange(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print hi"}}}`, true)
		if !strings.Contains(answer, `"result"`) || !strings.Contains(answer, `hi\n`) {
			t.Fatalf("answer %s", answer)
		}
	}
}

// TestDirectCallInStdioBatch sends a batch (protocol 2025-03-26) over
// stdio: its plain execute_code call is answered by the transport, its
// other request by the SDK, each on a line of its own.
func TestDirectCallInStdioBatch(t *testing.T) {
	s, _ := newServer(t)
	sdkCalls := countSDKCalls(s)
	c := newLineClient(t, s)
	c.exchange(strings.Replace(initializeBody, "2025-06-18", "2025-03-26", 1), true)
	c.exchange(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false)
	first := c.exchange(`[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print hi"}}},{"jsonrpc":"2.0","id":4,"method":"ping"}]`, true)
	second, err := c.answers.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	answers := first + "\n" + second
	if !strings.Contains(answers, `"id":3,"result"`) || !strings.Contains(answers, `hi\n`) || !strings.Contains(answers, `"id":4,"result"`) {
		t.Errorf("answers:\n%s", answers)
	}
	if got := sdkCalls.Load(); got != 0 {
		t.Errorf("the SDK answered %d tools/call requests, want none", got)
	}
}
