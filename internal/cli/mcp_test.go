package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/execute"
)

// startMCP runs coderunner mcp with the fake backend on stdin, in the
// background: its answers are read from out, which is closed when it
// ends, and its exit status then comes on exit.
func startMCP(t *testing.T, stdin io.Reader) (ta *testApp, out *io.PipeReader, exit <-chan int) {
	t.Helper()
	ta = newApp(t, "")
	out, outW := io.Pipe()
	ta.Stdin, ta.Stdout = stdin, outW
	code := make(chan int, 1)
	go func() {
		c := ta.Run(context.Background(), []string{"mcp", "--config", filepath.Join("testdata", "fake.yaml")})
		_ = outW.Close()
		code <- c
	}()
	return ta, out, code
}

// TestMCPCommand serves coderunner mcp over pipes, as over stdio, with the
// fake backend, and calls its tools with the SDK's client.
func TestMCPCommand(t *testing.T) {
	inR, inW := io.Pipe()
	ta, outR, exit := startMCP(t, inR)
	client := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr %s)", err, ta.stderr)
	}
	if got := cs.InitializeResult().ServerInfo; got.Name != "coderunner" || got.Version != "1.2.3" {
		t.Errorf("server info %+v", got)
	}
	tools, err := cs.ListTools(context.Background(), nil)
	// Sessions are on (the calls below use one): the files tools too.
	if err != nil || len(tools.Tools) != 6 {
		t.Fatalf("tools %v, %v", tools, err)
	}
	call := func(args map[string]any) (*mcp.CallToolResult, execute.Result) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		var r execute.Result
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &r)
		return res, r
	}
	res, r := call(map[string]any{"language": "fk", "code": "print hi", "session_id": "s"})
	if res.IsError || r.Stdout != "hi\n" || r.Status != execute.StatusSuccess || r.SessionID == nil {
		t.Errorf("execute_code: isError %v, %+v", res.IsError, r)
	}
	if spec := ta.fake.Last(); spec == nil || !strings.Contains(spec.Workspace, "coderunner-sessions-") {
		t.Errorf("session run not in a session workspace: %+v", spec)
	}
	res, r = call(map[string]any{"language": "fk", "code": "broken"})
	if !res.IsError || r.Status != execute.StatusSetupError {
		t.Errorf("sandbox failure: isError %v, %+v", res.IsError, r)
	}
	res, _ = call(map[string]any{"language": "cobol", "code": "x"})
	if !res.IsError {
		t.Error("a language outside the table was accepted")
	}
	_ = cs.Close()
	_ = inW.Close()
	if code := <-exit; code != ExitOK {
		t.Errorf("exit %d, stderr %s", code, ta.stderr)
	}
}

func TestMCPCommandUsage(t *testing.T) {
	ta := newApp(t, "")
	if code := ta.Run(context.Background(), []string{"mcp", "extra"}); code != ExitUsage || !strings.Contains(ta.stderr.String(), `unexpected argument "extra"`) {
		t.Errorf("exit %d, stderr %q", code, ta.stderr)
	}
	ta = newApp(t, "")
	if code := ta.Run(context.Background(), []string{"mcp", "-h"}); code != ExitOK || !strings.Contains(ta.stdout.String(), "Model Context Protocol") {
		t.Errorf("help: exit %d, %q", code, ta.stdout)
	}
}

// TestMCPCommandStdin serves coderunner mcp on the kinds of standard
// input it meets: a blocking pipe (as MCP hosts give), which it reads in
// non-blocking mode and must give back blocking, as the open file is
// shared with whoever started it; a pipe that is non-blocking already;
// and a regular file, which it reads as it is. The end of input is the
// client leaving, whose calls are then cancelled: from the file, which
// ends at once, answers are not awaited.
func TestMCPCommandStdin(t *testing.T) {
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	const ping = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	blockingPipe := func(t *testing.T) (*os.File, *os.File) {
		var fds [2]int
		if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		return os.NewFile(uintptr(fds[0]), "in"), os.NewFile(uintptr(fds[1]), "in-writer")
	}
	for _, tc := range []struct {
		name string
		open func(t *testing.T) (stdin, writer *os.File)
	}{
		{"blocking pipe", blockingPipe},
		{"non-blocking pipe", func(t *testing.T) (*os.File, *os.File) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			return r, w
		}},
		{"regular file", func(t *testing.T) (*os.File, *os.File) {
			path := filepath.Join(t.TempDir(), "in")
			if err := os.WriteFile(path, []byte(initialize+"\n"+ping+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			return f, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdin, writer := tc.open(t)
			defer stdin.Close()
			flagsBefore, err := unix.FcntlInt(stdin.Fd(), unix.F_GETFL, 0)
			if err != nil {
				t.Fatal(err)
			}
			ta, outR, exit := startMCP(t, stdin)
			answers := bufio.NewReader(outR)
			for _, line := range []string{initialize, ping} {
				if writer == nil {
					break
				}
				if _, err := io.WriteString(writer, line+"\n"); err != nil {
					t.Fatal(err)
				}
				answer, err := answers.ReadString('\n')
				if err != nil || !strings.Contains(answer, `"result"`) {
					t.Fatalf("answer %q, %v (stderr %s)", answer, err, ta.stderr)
				}
			}
			if writer != nil {
				_ = writer.Close()
			}
			go func() { _, _ = io.Copy(io.Discard, answers) }()
			// Standard input stays open: the command reads through a
			// descriptor of its own.
			if code := <-exit; code != ExitOK {
				t.Errorf("exit %d, stderr %s", code, ta.stderr)
			}
			flagsAfter, err := unix.FcntlInt(stdin.Fd(), unix.F_GETFL, 0)
			if err != nil {
				t.Fatal(err)
			}
			if flagsAfter != flagsBefore {
				t.Errorf("standard input's flags %#o after the command, %#o before", flagsAfter, flagsBefore)
			}
		})
	}
}

// TestMCPAnswersRequestsBeforeEndOfInput is coderunner mcp < requests.jsonl:
// a file of requests, read to its end at once, is answered in full and the
// command exits 0.
func TestMCPAnswersRequestsBeforeEndOfInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	requests := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"fk","code":"print hi"}}}`,
	}, "\n") + "\n"
	if err := os.WriteFile(path, []byte(requests), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ta := newApp(t, "")
	ta.Stdin = in
	if code := ta.Run(context.Background(), []string{"mcp", "--config", filepath.Join("testdata", "fake.yaml")}); code != ExitOK {
		t.Fatalf("exit %d, stderr %s", code, ta.stderr)
	}
	lines := strings.Split(strings.TrimSpace(ta.stdout.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d answers, want 3:\n%s\nstderr %s", len(lines), ta.stdout, ta.stderr)
	}
	answers := map[int]string{}
	for _, line := range lines {
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil || len(m.Result) == 0 {
			t.Errorf("answer %s (%v)", line, err)
		}
		answers[m.ID] = string(m.Result)
	}
	if len(answers) != 3 || answers[1] == "" || answers[2] == "" || !strings.Contains(answers[3], `hi\\n`) {
		t.Errorf("answers by id: %v", answers)
	}
}
