package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/judge"
)

// These tests start the real binary as an MCP host does, with only HOME
// and PATH in its environment, and talk to it with the SDK's client over
// stdio. They need the native sandbox (root) and python3.

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// coderunnerBinary builds cmd/coderunner once per test run.
func coderunnerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "coderunner-mcp-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "coderunner")
		goTool, err := exec.LookPath("go")
		if err != nil {
			// go test puts GOROOT in the environment of the test binary.
			goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		}
		out, err := exec.Command(goTool, "build", "-o", binary, "github.com/coderunner/coderunner/cmd/coderunner").CombinedOutput()
		if err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		t.Fatalf("building coderunner: %v", buildErr)
	}
	return binary
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// stdioSession starts `coderunner mcp` and connects to it.
func stdioSession(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	testutil.RequireRoot(t)
	_, err := exec.LookPath("python3")
	testutil.Require(t, err == nil, "needs python3")
	cmd := exec.Command(coderunnerBinary(t), "mcp")
	home := t.TempDir()
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to coderunner mcp: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("coderunner mcp stderr:\n%s", stderr.String())
		}
	})
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	return res, text
}

func decode(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

func TestStdioEndToEnd(t *testing.T) {
	var mu sync.Mutex
	var progress []float64
	cs := stdioSession(t, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, req.Params.Progress)
		mu.Unlock()
	}})

	tools, err := cs.ListTools(context.Background(), nil)
	// With sessions (as root, or a user with user namespaces) the files
	// tools too.
	if err != nil || len(tools.Tools) != 6 {
		t.Fatalf("tools %v, %v", tools, err)
	}

	res, text := callTool(t, cs, "execute_code", map[string]any{"language": "python", "code": "print('Hello, World!')"})
	var r execute.Result
	decode(t, res, &r)
	if res.IsError || r.Stdout != "Hello, World!\n" || r.Status != execute.StatusSuccess || r.Backend != "native" {
		t.Fatalf("execute_code: %s", text)
	}
	if !strings.HasPrefix(text, "success: exit code 0") {
		t.Errorf("text %q", text)
	}

	// A session keeps /workspace; /tmp is fresh.
	res, text = callTool(t, cs, "execute_code", map[string]any{"language": "python", "session_id": "e2e",
		"code": "open('kept.txt','w').write('kept')\nopen('/tmp/gone','w').write('x')"})
	if res.IsError {
		t.Fatal(text)
	}
	res, text = callTool(t, cs, "execute_code", map[string]any{"language": "bash", "session_id": "e2e",
		"code": "cat kept.txt; ls /tmp/gone 2>/dev/null || echo ' fresh'"})
	decode(t, res, &r)
	if r.Stdout != "kept fresh\n" {
		t.Errorf("session call: %s", text)
	}
	res, _ = callTool(t, cs, "execute_code", map[string]any{"language": "bash", "session_id": "other", "code": "ls"})
	decode(t, res, &r)
	if strings.Contains(r.Stdout, "kept.txt") {
		t.Errorf("another session sees the file: %q", r.Stdout)
	}

	// A file written with write_file is the program's to append to, and
	// read_file reads what it wrote.
	res, text = callTool(t, cs, "write_file", map[string]any{"session_id": "e2e", "path": "in/nums.txt", "content": "3\n4\n"})
	if res.IsError {
		t.Fatal(text)
	}
	res, text = callTool(t, cs, "execute_code", map[string]any{"language": "python", "session_id": "e2e",
		"code": "n = sum(int(x) for x in open('in/nums.txt'))\nopen('in/nums.txt', 'a').write('5\\n')\nopen('out.bin', 'wb').write(bytes([n, 255]))"})
	if decode(t, res, &r); r.Status != execute.StatusSuccess {
		t.Fatalf("the run: %s", text)
	}
	var fc struct{ Encoding, Content string }
	res, text = callTool(t, cs, "read_file", map[string]any{"session_id": "e2e", "path": "in/nums.txt"})
	if decode(t, res, &fc); fc.Encoding != "utf8" || fc.Content != "3\n4\n5\n" {
		t.Errorf("read_file: %s", text)
	}
	res, text = callTool(t, cs, "read_file", map[string]any{"session_id": "e2e", "path": "out.bin"})
	if decode(t, res, &fc); fc.Encoding != "base64" || fc.Content != "B/8=" {
		t.Errorf("read_file of binary: %s", text)
	}
	res, text = callTool(t, cs, "list_files", map[string]any{"session_id": "e2e"})
	if res.IsError || !strings.Contains(text, `"path":"out.bin","size":2`) {
		t.Errorf("list_files: %s", text)
	}

	// Errors are tool errors naming what is wrong.
	res, text = callTool(t, cs, "execute_code", map[string]any{"language": "cobol", "code": "x"})
	if !res.IsError || !strings.Contains(text, `"cobol"`) {
		t.Errorf("unknown language: isError %v, %q", res.IsError, text)
	}
	res, text = callTool(t, cs, "execute_code", map[string]any{"language": "python", "code": "x", "timeout": 1000})
	if !res.IsError || !strings.Contains(text, `"timeout"`) {
		t.Errorf("bad timeout: isError %v, %q", res.IsError, text)
	}

	// judge_code with progress.
	params := &mcp.CallToolParams{Name: "judge_code", Arguments: map[string]any{
		"language": "python", "code": "print(int(input())*2)",
		"test_cases": []map[string]any{{"input": "1", "expected_output": "2"}, {"input": "2", "expected_output": "4"}, {"input": "3", "expected_output": "7"}},
	}}
	params.SetProgressToken("p")
	jres, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	var jr judge.ExecutionResult
	decode(t, jres, &jr)
	if jres.IsError || jr.Status != judge.StatusSomePassed || len(jr.TestResults) != 3 {
		t.Errorf("judge_code: %+v", jr)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		if n >= 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if len(progress) != 4 || progress[3] != 3 {
		t.Errorf("progress %v, want 0 1 2 3", progress)
	}
	mu.Unlock()

	res, text = callTool(t, cs, "list_languages", map[string]any{})
	if res.IsError || !strings.Contains(text, `"id":"python"`) {
		t.Errorf("list_languages: %s", text)
	}
}

// TestStdioCancellation cancels a call whose program would run for a
// minute, appending to a file in its session. The session admits its next
// call only when the cancelled one has ended, so the next call returning,
// and the file no longer growing, show that the program was stopped.
func TestStdioCancellation(t *testing.T) {
	cs := stdioSession(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{
			"language": "python", "session_id": "long", "timeout": 60,
			"code": "import time\nwhile True:\n    open('ticks','a').write('x')\n    time.sleep(0.01)",
		}})
		done <- err
	}()
	// Let it tick, then cancel.
	time.Sleep(time.Second)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	size := func() string {
		res, _ := callTool(t, cs, "execute_code", map[string]any{"language": "bash", "session_id": "long", "timeout": 10, "code": "wc -c < ticks"})
		var r execute.Result
		decode(t, res, &r)
		return r.Stdout
	}
	waitCtx, waitCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer waitCancel()
	first := make(chan string, 1)
	go func() { first <- size() }()
	var a string
	select {
	case a = <-first:
	case <-waitCtx.Done():
		t.Fatal("the session stayed busy: the cancelled program kept running")
	}
	time.Sleep(200 * time.Millisecond)
	if a == "" || a == "0\n" {
		t.Fatalf("the program wrote nothing before it was cancelled: %q", a)
	}
	if b := size(); a != b {
		t.Errorf("the file still grows after cancellation: %q then %q", a, b)
	}
}

// TestStdioMatplotlib: a figure of the real matplotlib, drawn in an
// interpreter session, comes back from execute_code as an image content
// item holding a PNG.
func TestStdioMatplotlib(t *testing.T) {
	testutil.RequirePythonModule(t, "matplotlib")
	cs := stdioSession(t, nil)
	// Importing matplotlib takes a second or more of CPU the first time
	// (its font cache): time to spare.
	res, text := callTool(t, cs, "execute_code", map[string]any{"language": "python", "session_id": "plot",
		"mode": "interpreter", "timeout": 120, "code": "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])"})
	var got struct {
		Status string `json:"status"`
		Stderr string `json:"stderr"`
	}
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &got); err != nil || res.IsError || got.Status != "success" || got.Stderr != "" {
		t.Fatalf("the plot (%v): %s", err, text)
	}
	var images []*mcp.ImageContent
	for _, c := range res.Content {
		if ic, ok := c.(*mcp.ImageContent); ok {
			images = append(images, ic)
		}
	}
	if len(images) != 1 || images[0].MIMEType != "image/png" || !strings.HasPrefix(string(images[0].Data), "\x89PNG\r\n\x1a\n") {
		t.Fatalf("image content: %d items %+v", len(images), images)
	}
}
