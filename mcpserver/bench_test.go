package mcpserver

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/lang"
)

// BenchmarkProtocol times one execute_code call through the MCP layers
// alone: an executor that answers at once, over each transport. The
// sandboxed run that a real call adds is measured by tools/mcpbench.
func BenchmarkProtocol(b *testing.B) {
	fr := newFakeRunner()
	s, err := New(Options{Runner: fr, Languages: lang.Default()})
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"language": "python", "code": "print hello"}
	for _, tr := range append([]string{"pipe-sdk", "http-sdk"}, transports...) {
		b.Run(tr, func(b *testing.B) {
			cs := connect(b, s, tr, nil)
			b.ReportAllocs()
			before := cpuTime()
			n := 0
			for b.Loop() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolExecuteCode, Arguments: args})
				if err != nil || res.IsError {
					b.Fatal(err)
				}
				n++
			}
			// CPU time, client and server together, tells more than wall
			// time on a machine that other work shares.
			b.ReportMetric(float64(cpuTime()-before)/float64(n), "cpu-ns/op")
		})
	}
}

// BenchmarkHandler times this package's own part of a call: decoding the
// arguments, building the request and encoding the result.
func BenchmarkHandler(b *testing.B) {
	s, err := New(Options{Runner: newFakeRunner(), Languages: lang.Default()})
	if err != nil {
		b.Fatal(err)
	}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: ToolExecuteCode,
		Arguments: []byte(`{"language":"python","code":"print hello","timeout":5}`)}}
	b.ReportAllocs()
	for b.Loop() {
		res, err := s.executeCode(context.Background(), req)
		if err != nil || res.IsError {
			b.Fatal(err)
		}
	}
}

// cpuTime is the CPU time the process used so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkServerLines times the server's side of a call alone: lines
// written to LineTransport as a client would, the answer line read back,
// no MCP client library in the way.
func BenchmarkServerLines(b *testing.B) {
	s, err := New(Options{Runner: newFakeRunner(), Languages: lang.Default()})
	if err != nil {
		b.Fatal(err)
	}
	c := newLineClient(b, s)
	c.exchange(initializeBody, true)
	c.exchange(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print hello"}}}`
	b.ReportAllocs()
	before := cpuTime()
	n := 0
	for b.Loop() {
		if got := c.exchange(call, true); !strings.Contains(got, `hello\n`) {
			b.Fatalf("answer %s", got)
		}
		n++
	}
	b.ReportMetric(float64(cpuTime()-before)/float64(n), "cpu-ns/op")
}
