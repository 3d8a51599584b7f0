package cli

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/execute"
)

// TestMCPCommand serves coderunner mcp over pipes, as over stdio, with the
// fake backend, and calls its tools with the SDK's client.
func TestMCPCommand(t *testing.T) {
	ta := newApp(t, "")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ta.Stdin, ta.Stdout = inR, outW
	exit := make(chan int, 1)
	go func() {
		code := ta.Run(context.Background(), []string{"mcp", "--config", filepath.Join("testdata", "fake.yaml")})
		_ = outW.Close()
		exit <- code
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr %s)", err, ta.stderr)
	}
	if got := cs.InitializeResult().ServerInfo; got.Name != "coderunner" || got.Version != "1.2.3" {
		t.Errorf("server info %+v", got)
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 3 {
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
	if spec := ta.fake.last(); spec == nil || !strings.Contains(spec.Workspace, "coderunner-sessions-") {
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
