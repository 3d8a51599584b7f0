package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/multifile"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/session"
)

// fakeRunner answers execute_code: "print X" succeeds with X, "fail"
// exits 2, "broken" is a setup_error, "refuse" is refused, "block" waits
// for the context and records that it ended.
type fakeRunner struct {
	mu       sync.Mutex
	reqs     []execute.Request
	started  chan struct{}
	canceled chan struct{}
	// gate holds the calls of code "gated" until it is closed.
	gate chan struct{}
}

func newFakeRunner() *fakeRunner {
	return &fakeRunner{started: make(chan struct{}, 10), canceled: make(chan struct{}, 10), gate: make(chan struct{})}
}

func (f *fakeRunner) Execute(ctx context.Context, req execute.Request) (*execute.Result, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	res := &execute.Result{Status: execute.StatusSuccess, Language: req.Language, Backend: "fake", SessionID: req.SessionID,
		LimitsApplied: execute.LimitsApplied{TimeLimitSeconds: req.Limits.TimeLimit, MemoryLimitMB: req.Limits.MemoryLimit}}
	switch code := req.Code; {
	case strings.HasPrefix(code, "print "):
		res.Stdout = strings.TrimPrefix(code, "print ") + "\n"
	case code == "fail":
		msg := "Process exited with code 2."
		res.Status, res.ExitCode, res.ErrorMessage, res.Stderr = execute.StatusExecutionError, 2, &msg, "boom\n"
	case code == "broken":
		msg := "sandbox failed: cgroup vanished"
		res.Status, res.ExitCode, res.ErrorMessage = execute.StatusSetupError, -1, &msg
	case code == "refuse":
		return nil, fmt.Errorf("%w: 100 sessions are open", session.ErrTooManySessions)
	case code == "gated":
		f.started <- struct{}{}
		<-f.gate
		res.Stdout = "gated\n"
	case req.Mode == execute.ModeInterpreter:
		v := "'" + code + "'"
		res.Interpreter, res.Value = true, &v
		res.Display = []execute.Display{{MIME: "image/png", Data: "iVBORw0K"}}
	case code == "block":
		f.started <- struct{}{}
		<-ctx.Done()
		f.canceled <- struct{}{}
		return nil, ctx.Err()
	}
	return res, nil
}

func (f *fakeRunner) last() execute.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reqs[len(f.reqs)-1]
}

// fakeEngine runs "echo" programs (stdout = stdin) and "block" programs
// that wait for their context.
type fakeEngine struct{ runner *fakeRunner }

// Prepare takes the entry's content for the code when the request names
// one, so that a judge of files judges what the entry holds.
func (e fakeEngine) Prepare(_ context.Context, language, code string, opts judge.ProgramOptions) (judge.Program, error) {
	if language != "python" {
		return nil, fmt.Errorf("%w: %s", judge.ErrUnsupportedLanguage, language)
	}
	if opts.Entry != "" {
		i := slices.IndexFunc(opts.Files, func(f sandbox.File) bool { return f.Path == opts.Entry })
		if i < 0 {
			return nil, &multifile.Error{Field: "entry", Reason: "not among files"}
		}
		code = string(opts.Files[i].Content)
	}
	return fakeProgram{code: code, runner: e.runner}, nil
}

type fakeProgram struct {
	code   string
	runner *fakeRunner
}

func (p fakeProgram) Run(ctx context.Context, stdin []byte, _ sandbox.Limits) (*sandbox.Result, error) {
	if p.code == "block" {
		p.runner.started <- struct{}{}
		<-ctx.Done()
		p.runner.canceled <- struct{}{}
		return &sandbox.Result{Status: sandbox.StatusSignaled}, nil
	}
	return &sandbox.Result{Status: sandbox.StatusOK, Stdout: stdin, WallTime: time.Millisecond}, nil
}

func (fakeProgram) Close() error { return nil }

// Invoke plays a checker whose code is "checker:N": it exits with N,
// saying so on stdout.
func (p fakeProgram) Invoke(_ context.Context, inv judge.Invocation) (*sandbox.Result, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(p.code, "checker:"))
	if err != nil {
		return nil, fmt.Errorf("fake: %q is no checker", p.code)
	}
	msg := fmt.Sprintf("checker says %d", n)
	_, _ = inv.Stdout.Write([]byte(msg))
	res := &sandbox.Result{Status: sandbox.StatusOK, Stdout: []byte(msg)}
	if n != 0 {
		res.Status, res.ExitCode = sandbox.StatusNonzeroExit, n
	}
	return res, nil
}

func newServer(t *testing.T) (*Server, *fakeRunner) {
	t.Helper()
	fr := newFakeRunner()
	s, err := New(Options{Runner: fr, Languages: lang.Default(), Engine: fakeEngine{fr}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return s, fr
}

// transports are the ways the tests reach a Server.
var transports = []string{"memory", "pipe", "http"}

// connect returns a client session to s over the named transport.
func connect(t testing.TB, s *Server, transport string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts)
	var ct mcp.Transport
	switch transport {
	case "memory":
		st, c := mcp.NewInMemoryTransports()
		ss, err := s.MCP().Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ss.Close() })
		ct = c
	case "pipe-sdk", "pipe":
		// newline-delimited JSON over pipes, as coderunner mcp on stdio:
		// the server on the SDK's IOTransport or on LineTransport.
		serverRead, clientWrite := io.Pipe()
		clientRead, serverWrite := io.Pipe()
		if transport == "pipe-sdk" {
			ss, err := s.MCP().Connect(ctx, &mcp.IOTransport{Reader: serverRead, Writer: serverWrite}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ss.Close() })
		} else {
			// As coderunner mcp serves: through Run, which answers
			// plain execute_code calls in the transport.
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = s.Run(ctx, &LineTransport{Reader: serverRead, Writer: serverWrite})
			}()
			t.Cleanup(func() {
				_ = clientWrite.Close()
				<-done
			})
		}
		ct = &mcp.IOTransport{Reader: clientRead, Writer: clientWrite}
	case "http", "http-sdk":
		// HTTPHandler, or the SDK's streamable handler for comparison.
		h := s.Handler()
		if transport == "http-sdk" {
			h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.MCP() }, nil)
		}
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		ct = &mcp.StreamableClientTransport{Endpoint: ts.URL}
	}
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// structuredInto decodes the structured content and checks that the text
// is a summary line followed by the same JSON.
func structuredInto(t *testing.T, res *mcp.CallToolResult, v any) (summary string) {
	t.Helper()
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("structured content %s: %v", data, err)
	}
	summary, body, ok := strings.Cut(text(res), "\n")
	if !ok {
		t.Fatalf("text has no JSON after the summary: %q", text(res))
	}
	var fromText, fromStructured any
	if err := json.Unmarshal([]byte(body), &fromText); err != nil {
		t.Fatalf("text after the summary is not JSON: %v", err)
	}
	_ = json.Unmarshal(data, &fromStructured)
	if fmt.Sprint(fromText) != fmt.Sprint(fromStructured) {
		t.Errorf("text JSON differs from structured content:\n%s\n%s", body, data)
	}
	return summary
}

func TestListTools(t *testing.T) {
	s, _ := newServer(t)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := connect(t, s, tr, nil)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			var exec *mcp.Tool
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				if tool.Description == "" {
					t.Errorf("%s has no description", tool.Name)
				}
				if tool.Name == ToolExecuteCode {
					exec = tool
				}
			}
			slices.Sort(names)
			if !slices.Equal(names, []string{ToolExecuteCode, ToolJudgeCode, ToolListLanguages}) {
				t.Fatalf("tools %v", names)
			}
			var schema struct {
				Required   []string `json:"required"`
				Properties map[string]struct {
					Enum        []string `json:"enum"`
					Minimum     *float64 `json:"minimum"`
					Maximum     *float64 `json:"maximum"`
					Description string   `json:"description"`
				} `json:"properties"`
			}
			b, _ := json.Marshal(exec.InputSchema)
			if err := json.Unmarshal(b, &schema); err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(schema.Properties["language"].Enum, "python") || !slices.Contains(schema.Properties["language"].Enum, "js") {
				t.Errorf("language enum %v", schema.Properties["language"].Enum)
			}
			if to := schema.Properties["timeout"]; to.Minimum == nil || *to.Minimum != 1 || to.Maximum == nil || *to.Maximum != 300 {
				t.Errorf("timeout bounds %+v", to)
			}
			for _, p := range []string{"language", "code", "stdin", "timeout", "session_id"} {
				if schema.Properties[p].Description == "" {
					t.Errorf("argument %s has no description", p)
				}
			}
			if !slices.Equal(schema.Required, []string{"language"}) {
				t.Errorf("required %v", schema.Required)
			}
		})
	}
}

func TestExecuteCode(t *testing.T) {
	s, fr := newServer(t)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := connect(t, s, tr, nil)
			res := call(t, cs, ToolExecuteCode, map[string]any{
				"language": "python", "code": "print <hi> & bye", "stdin": "in", "timeout": 2.5, "memory_limit": 64, "session_id": "s-1",
			})
			if res.IsError {
				t.Fatalf("tool error: %s", text(res))
			}
			var r execute.Result
			summary := structuredInto(t, res, &r)
			if r.Stdout != "<hi> & bye\n" || r.Status != execute.StatusSuccess || r.SessionID == nil || *r.SessionID != "s-1" {
				t.Errorf("result %+v", r)
			}
			if !strings.HasPrefix(summary, "success: exit code 0") || !strings.Contains(summary, "session s-1") {
				t.Errorf("summary %q", summary)
			}
			req := fr.last()
			if req.Stdin != "in" || req.Limits.TimeLimit != 2.5 || req.Limits.MemoryLimit != 64 || req.Limits.CPULimit != 0.5 || req.SessionTTL != 0 {
				t.Errorf("request %+v", req)
			}
			call(t, cs, ToolExecuteCode, map[string]any{"language": "python", "code": "print x", "session_id": "s-1", "session_ttl_seconds": 120})
			if got := fr.last().SessionTTL; got != 2*time.Minute {
				t.Errorf("session_ttl_seconds 120 reached the runner as %s", got)
			}

			// A failing program is a result, not a tool error.
			res = call(t, cs, ToolExecuteCode, map[string]any{"language": "py", "code": "fail"})
			structuredInto(t, res, &r)
			if res.IsError || r.Status != execute.StatusExecutionError || r.ExitCode != 2 {
				t.Errorf("failing program: isError %v, %+v", res.IsError, r)
			}
			// A sandbox failure is.
			res = call(t, cs, ToolExecuteCode, map[string]any{"language": "py", "code": "broken"})
			structuredInto(t, res, &r)
			if !res.IsError || r.Status != execute.StatusSetupError {
				t.Errorf("sandbox failure: isError %v, %+v", res.IsError, r)
			}
		})
	}
}

func TestExecuteCodeErrors(t *testing.T) {
	s, _ := newServer(t)
	tests := []struct {
		name string
		args any
		want string
	}{
		{"unknown language", map[string]any{"language": "cobol", "code": "x"}, `unsupported language "cobol": use one of bash,`},
		{"no language", map[string]any{"code": "x"}, `argument "language" is required`},
		{"empty code", map[string]any{"language": "python", "code": " "}, `argument "code" is required and must not be empty`},
		{"timeout high", map[string]any{"language": "python", "code": "x", "timeout": 301}, `argument "timeout": 301 must be between 1 and 300 seconds`},
		{"timeout low", map[string]any{"language": "python", "code": "x", "timeout": 0}, `argument "timeout": 0 must be between 1 and 300 seconds`},
		{"memory", map[string]any{"language": "python", "code": "x", "memory_limit": 8}, `argument "memory_limit": 8 must be between 16 and 8192 MB`},
		{"session", map[string]any{"language": "python", "code": "x", "session_id": "../../etc"}, `argument "session_id": invalid session_id`},
		{"unknown argument", map[string]any{"lang": "python", "code": "x"}, `unknown argument "lang" (the arguments are args, artifacts, code, compiler_flags, entry, env, files, language, memory_limit, mode, session_id, session_ttl_seconds, stdin, timeout)`},
		{"ttl without session", map[string]any{"language": "python", "code": "x", "session_ttl_seconds": 60}, `argument "session_ttl_seconds" needs a session_id`},
		{"ttl zero", map[string]any{"language": "python", "code": "x", "session_id": "s", "session_ttl_seconds": 0}, `argument "session_ttl_seconds": 0 must be at least 1`},
		{"ttl fraction", map[string]any{"language": "python", "code": "x", "session_id": "s", "session_ttl_seconds": 1.5}, `argument "session_ttl_seconds" must be an integer`},
		{"wrong type", map[string]any{"language": "python", "code": 42}, `argument "code" must be a string, not a number`},
		{"wrong type timeout", map[string]any{"language": "python", "code": "x", "timeout": "10s"}, `argument "timeout" must be a number, not a string`},
		{"refused by the runner", map[string]any{"language": "python", "code": "refuse"}, "too many sessions: 100 sessions are open"},
		{"file leaving", map[string]any{"language": "python", "code": "x", "files": []any{map[string]any{"path": "../x", "content": ""}}},
			`argument "files[0].path": "../x" leaves the workspace`},
		{"file bad base64", map[string]any{"language": "python", "code": "x", "files": []any{map[string]any{"path": "a", "content": "%%", "encoding": "base64"}}},
			`argument "files[0].content": not valid base64`},
		{"file unknown field", map[string]any{"language": "python", "code": "x", "files": []any{map[string]any{"path": "a", "mode": 7}}},
			`unknown argument "files[0].mode" (the fields of files[0] are content, encoding, executable, path)`},
		{"files without entry", map[string]any{"language": "python", "files": []any{map[string]any{"path": "a.py", "content": "x"}}},
			`argument "code" is required and must not be empty, unless "files" and "entry" hold the program`},
		{"entry not a file", map[string]any{"language": "python", "entry": "b.py", "files": []any{map[string]any{"path": "a.py", "content": "x"}}},
			`argument "entry": "b.py" is not among files`},
		{"artifacts max_bytes", map[string]any{"language": "python", "code": "x", "artifacts": map[string]any{"include_content": true, "max_bytes": -2}},
			`argument "artifacts": invalid artifacts options: max_bytes must be between`},
	}
	for _, tr := range transports {
		cs := connect(t, s, tr, nil)
		for _, tt := range tests {
			t.Run(tr+"/"+tt.name, func(t *testing.T) {
				res := call(t, cs, ToolExecuteCode, tt.args)
				if !res.IsError || !strings.Contains(text(res), tt.want) {
					t.Errorf("isError %v, text %q; want an error containing %q", res.IsError, text(res), tt.want)
				}
			})
		}
	}
}

func TestJudgeCodeFiles(t *testing.T) {
	s, _ := newServer(t)
	cs := connect(t, s, "memory", nil)
	res := call(t, cs, ToolJudgeCode, map[string]any{
		"language": "python", "entry": "sol.py",
		"files":      []any{map[string]any{"path": "sol.py", "content": "echo"}},
		"test_cases": []map[string]any{{"input": "1\n", "expected_output": "1\n"}},
	})
	var r judge.ExecutionResult
	structuredInto(t, res, &r)
	if res.IsError || r.Status != judge.StatusAllPassed {
		t.Fatalf("isError %v, result %+v", res.IsError, r)
	}
	res = call(t, cs, ToolJudgeCode, map[string]any{
		"language": "python", "code": "echo",
		"files":      []any{map[string]any{"path": "/etc/x", "content": ""}},
		"test_cases": []map[string]any{{"input": "1\n", "expected_output": "1\n"}},
	})
	structuredInto(t, res, &r)
	if r.Status != judge.StatusSandboxError || r.ErrorInfo == nil || !strings.Contains(r.ErrorInfo.Message, "files[0].path") {
		t.Fatalf("result %+v", r)
	}
}

func TestJudgeCode(t *testing.T) {
	s, _ := newServer(t)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			var mu sync.Mutex
			var progress []*mcp.ProgressNotificationParams
			cs := connect(t, s, tr, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				mu.Lock()
				progress = append(progress, req.Params)
				mu.Unlock()
			}})
			params := &mcp.CallToolParams{Name: ToolJudgeCode, Arguments: map[string]any{
				"language": "python", "code": "echo", "compare": "exact",
				"test_cases": []map[string]any{
					{"id": "a", "input": "1\n", "expected_output": "1\n"},
					{"id": "b", "input": "2\n", "expected": "3\n"},
					{"id": "c", "input": "4\n", "expected_output": "4\n", "is_hidden": true},
				},
			}}
			params.SetProgressToken("judge-1")
			res, err := cs.CallTool(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			var r judge.ExecutionResult
			summary := structuredInto(t, res, &r)
			if res.IsError || r.Status != judge.StatusSomePassed || len(r.TestResults) != 3 || r.TestResults[1].Status != judge.TestWrongAnswer {
				t.Fatalf("isError %v, result %+v", res.IsError, r)
			}
			if !strings.HasPrefix(summary, "some_passed: ") {
				t.Errorf("summary %q", summary)
			}
			// Notifications may still be in flight when the result comes.
			deadline := time.Now().Add(5 * time.Second)
			for {
				mu.Lock()
				n := len(progress)
				mu.Unlock()
				if n >= 4 || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(progress) != 4 {
				t.Fatalf("%d progress notifications, want 4 (ready, then one per test)", len(progress))
			}
			for i, p := range progress {
				if p.ProgressToken != "judge-1" || p.Progress != float64(i) || p.Total != 3 || p.Message == "" {
					t.Errorf("notification %d: %+v", i, p)
				}
			}
		})
	}
}

// TestJudgeCodeSubtasks: judge_code takes subtasks and answers with the
// score, in the structured result and in the summary line.
func TestJudgeCodeSubtasks(t *testing.T) {
	s, _ := newServer(t)
	cs := connect(t, s, "memory", nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolJudgeCode, Arguments: map[string]any{
		"language": "python", "code": "echo",
		"test_cases": []map[string]any{
			{"id": "a", "input": "1\n", "expected_output": "1\n"},
			{"id": "b", "input": "2\n", "expected": "3\n"},
		},
		"subtasks": []map[string]any{
			{"id": "first", "points": 40, "tests": []string{"a"}},
			{"id": "both", "points": 60, "tests": []string{"a", "b"}, "policy": "sum"},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var r judge.ExecutionResult
	summary := structuredInto(t, res, &r)
	if res.IsError || r.Score == nil || *r.Score != 70 || *r.MaxScore != 100 || len(r.SubtaskResults) != 2 {
		t.Fatalf("isError %v, score %v of %v, %+v", res.IsError, r.Score, r.MaxScore, r.SubtaskResults)
	}
	if !strings.Contains(summary, "score 70/100") {
		t.Errorf("summary %q", summary)
	}
	// A subtask's unknown field is refused naming it.
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolJudgeCode, Arguments: map[string]any{
		"language": "python", "code": "echo", "test_cases": []map[string]any{{"id": "a", "expected_output": "1"}},
		"subtasks": []map[string]any{{"id": "s", "points": 1, "tests": []string{"a"}, "weight": 2}},
	}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "weight") {
		t.Errorf("an unknown subtask field: %v %s", err, text(res))
	}
}

// TestJudgeCodeChecker: judge_code takes a checker, whose verdict and
// message are the tests'; its runs are not counted as tests.
func TestJudgeCodeChecker(t *testing.T) {
	s, _ := newServer(t)
	var mu sync.Mutex
	var progress []*mcp.ProgressNotificationParams
	cs := connect(t, s, "memory", &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, req.Params)
		mu.Unlock()
	}})
	params := &mcp.CallToolParams{Name: ToolJudgeCode, Arguments: map[string]any{
		"language": "python", "code": "echo",
		"test_cases": []map[string]any{{"id": "a", "input": "1\n", "expected_output": "1\n"}, {"id": "b", "input": "2\n", "expected_output": "2\n"}},
		"checker":    map[string]any{"language": "python", "code": "checker:2"},
	}}
	params.SetProgressToken("chk")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	var r judge.ExecutionResult
	structuredInto(t, res, &r)
	if r.Status != judge.StatusAllFailed || len(r.TestResults) != 2 {
		t.Fatalf("%+v", r)
	}
	for _, tr := range r.TestResults {
		if tr.Status != judge.TestPresentationError || tr.CheckerMessage == nil || *tr.CheckerMessage != "checker says 2" {
			t.Errorf("%+v", tr)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range progress {
		if p.Progress > 2 || p.Total != 2 {
			t.Errorf("notification %+v: a checker run counted as a test", p)
		}
	}

	// A checker's unknown field is refused naming it.
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolJudgeCode, Arguments: map[string]any{
		"language": "python", "code": "echo", "test_cases": []map[string]any{{"id": "a", "expected_output": "1"}},
		"checker": map[string]any{"language": "python", "code": "checker:0", "timeout": 3},
	}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "timeout") {
		t.Errorf("an unknown checker field: %v %s", err, text(res))
	}
}

func TestJudgeCodeErrors(t *testing.T) {
	s, _ := newServer(t)
	cs := connect(t, s, "memory", nil)
	tests := []struct {
		name string
		args map[string]any
		code string
		want string
	}{
		{"no tests", map[string]any{"language": "python", "code": "echo", "test_cases": []any{}}, judge.CodeValidationError, ""},
		{"memory", map[string]any{"language": "python", "code": "echo", "memory_limit_mb": 4096,
			"test_cases": []map[string]any{{"input": "", "expected_output": ""}}}, judge.CodeValidationError, "memory"},
		{"language", map[string]any{"language": "cobol", "code": "x", "test_cases": []map[string]any{{"input": "", "expected_output": ""}}},
			judge.CodeUnsupportedLanguage, "cobol"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, cs, ToolJudgeCode, tt.args)
			var r judge.ExecutionResult
			structuredInto(t, res, &r)
			if !res.IsError || r.ErrorInfo == nil || r.ErrorInfo.Code != tt.code || !strings.Contains(strings.ToLower(text(res)), tt.want) {
				t.Errorf("isError %v, text %s", res.IsError, text(res))
			}
		})
	}
	res := call(t, cs, ToolJudgeCode, map[string]any{"language": "python", "code": "x", "test_cases": "none"})
	if !res.IsError || !strings.Contains(text(res), `argument "test_cases" must be an array, not a string`) {
		t.Errorf("wrong type: %s", text(res))
	}
}

// TestJudgeCodeTypeErrorsNameTheArgument: a value of the wrong type at any
// depth of judge_code's arguments is refused naming it as the call wrote
// it, array elements by their index, as execute_code names its own.
func TestJudgeCodeTypeErrorsNameTheArgument(t *testing.T) {
	s, _ := newServer(t)
	one := map[string]any{"id": "a", "expected_output": "1"}
	for _, tc := range []struct {
		extra map[string]any
		want  string
	}{
		{map[string]any{"test_cases": []any{one, one, map[string]any{"input": 3, "expected_output": "1"}}}, `argument "test_cases[2].input" must be a string, not a number`},
		{map[string]any{"test_cases": []any{one, map[string]any{"expected": false}}}, `argument "test_cases[1].expected" must be a string, not a bool`},
		{map[string]any{"test_cases": []any{one, "1"}}, `argument "test_cases[1]" must be an object, not a string`},
		{map[string]any{"subtasks": []any{map[string]any{"id": "s", "points": 1, "tests": []any{"a", 1}}}}, `argument "subtasks[0].tests[1]" must be a string, not a number`},
		{map[string]any{"files": []any{map[string]any{"path": "a", "content": ""}, map[string]any{"path": "b", "executable": "yes"}}}, `argument "files[1].executable" must be a boolean, not a string`},
		{map[string]any{"checker": map[string]any{"language": "python", "code": []any{}}}, `argument "checker.code" must be a string, not an array`},
		{map[string]any{"env": map[string]any{"A": "1", "B": 2}}, `argument "env.B" must be a string, not a number`},
	} {
		args := map[string]any{"language": "python", "code": "echo", "test_cases": []any{one}}
		maps.Copy(args, tc.extra)
		for _, tr := range transports {
			cs := connect(t, s, tr, nil)
			if res := call(t, cs, ToolJudgeCode, args); !res.IsError || text(res) != tc.want {
				t.Errorf("%s %v: isError %v, text %q; want %q", tr, tc.extra, res.IsError, text(res), tc.want)
			}
		}
	}
}

// TestUnknownNestedArgumentsNamedByPlace: an argument neither tool
// takes is refused naming its place as the call wrote it, at the top and
// in a nested object (an element of an array by its index), with the
// names that object takes, so that the model can correct the call
// without guessing which "mode" was wrong.
func TestUnknownNestedArgumentsNamedByPlace(t *testing.T) {
	s, _ := newServer(t)
	one := map[string]any{"id": "a", "expected_output": "1"}
	file := map[string]any{"path": "a.txt", "content": ""}
	const (
		testCase = "description, expected, expected_output, id, input, is_hidden, timeout_ms"
		fileKeys = "content, encoding, executable, path"
	)
	for _, tc := range []struct {
		tool  string
		extra map[string]any
		want  string
	}{
		{ToolExecuteCode, map[string]any{"limits": map[string]any{"mode": 1}},
			`unknown argument "limits" (the arguments are args, artifacts, code, compiler_flags, entry, env, files, language, memory_limit, mode, session_id, session_ttl_seconds, stdin, timeout)`},
		{ToolExecuteCode, map[string]any{"files": []any{file, map[string]any{"path": "b", "mode": "0755"}}},
			`unknown argument "files[1].mode" (the fields of files[1] are ` + fileKeys + `)`},
		{ToolExecuteCode, map[string]any{"artifacts": map[string]any{"include_content": true, "max": 10}},
			`unknown argument "artifacts.max" (the fields of artifacts are include_content, max_bytes)`},
		{ToolJudgeCode, map[string]any{"time_limit": 1},
			`unknown argument "time_limit" (the arguments are args, checker, code, compare, compiler_flags, entry, env, files, interactor, language, memory_limit_mb, request_id, subtasks, test_cases, timeout_ms, total_timeout_ms)`},
		{ToolJudgeCode, map[string]any{"test_cases": []any{one, one, map[string]any{"expected": "1", "mode": "exact"}}},
			`unknown argument "test_cases[2].mode" (the fields of test_cases[2] are ` + testCase + `)`},
		{ToolJudgeCode, map[string]any{"subtasks": []any{map[string]any{"id": "s", "points": 1, "tests": []any{"a"}, "weight": 2}}},
			`unknown argument "subtasks[0].weight" (the fields of subtasks[0] are id, points, policy, stop_at_first_failure, tests)`},
		{ToolJudgeCode, map[string]any{"files": []any{file, map[string]any{"path": "b", "mode": "0755"}}},
			`unknown argument "files[1].mode" (the fields of files[1] are ` + fileKeys + `)`},
		{ToolJudgeCode, map[string]any{"interactor": map[string]any{"language": "python", "code": "x", "mode": "strict"}},
			`unknown argument "interactor.mode" (the fields of interactor are code, language)`},
	} {
		args := map[string]any{"language": "python", "code": "echo"}
		if tc.tool == ToolJudgeCode {
			args["test_cases"] = []any{one}
		}
		maps.Copy(args, tc.extra)
		for _, tr := range transports {
			cs := connect(t, s, tr, nil)
			if res := call(t, cs, tc.tool, args); !res.IsError || text(res) != tc.want {
				t.Errorf("%s %s %v: isError %v, text %q; want %q", tr, tc.tool, tc.extra, res.IsError, text(res), tc.want)
			}
		}
	}
	// A tool that takes no arguments says so.
	cs := connect(t, s, "memory", nil)
	if res := call(t, cs, ToolListLanguages, map[string]any{"all": true}); !res.IsError || text(res) != `unknown argument "all" (the tool takes no arguments)` {
		t.Errorf("list_languages: isError %v, text %q", res.IsError, text(res))
	}
}

func TestJudgeUnavailable(t *testing.T) {
	s, err := New(Options{Runner: newFakeRunner(), Languages: lang.Default(), EngineErr: errors.New("no cache directory")})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, s, "memory", nil)
	res := call(t, cs, ToolJudgeCode, map[string]any{"language": "python", "code": "x", "test_cases": []map[string]any{{"expected_output": ""}}})
	if !res.IsError || !strings.Contains(text(res), "no cache directory") {
		t.Errorf("isError %v, text %s", res.IsError, text(res))
	}
}

func TestListLanguages(t *testing.T) {
	s, _ := newServer(t)
	cs := connect(t, s, "http", nil)
	res := call(t, cs, ToolListLanguages, map[string]any{})
	var l languageList
	summary := structuredInto(t, res, &l)
	i := slices.IndexFunc(l.Languages, func(li lang.Info) bool { return li.ID == "python" })
	if res.IsError || i < 0 || !slices.Contains(l.Languages[i].Aliases, "py") {
		t.Errorf("languages %+v", l)
	}
	if !strings.Contains(summary, "languages") {
		t.Errorf("summary %q", summary)
	}
	if res := call(t, cs, ToolListLanguages, map[string]any{"all": true}); !res.IsError {
		t.Error("an unknown argument was accepted")
	}
}

func TestCancellation(t *testing.T) {
	for _, tr := range transports {
		for _, tool := range []string{ToolExecuteCode, ToolJudgeCode} {
			t.Run(tr+"/"+tool, func(t *testing.T) {
				s, fr := newServer(t)
				cs := connect(t, s, tr, nil)
				args := map[string]any{"language": "python", "code": "block"}
				if tool == ToolJudgeCode {
					args["test_cases"] = []map[string]any{{"expected_output": ""}}
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
					done <- err
				}()
				<-fr.started
				cancel()
				select {
				case <-fr.canceled:
				case <-time.After(10 * time.Second):
					t.Fatal("the server did not stop the run when the client cancelled")
				}
				if err := <-done; err == nil {
					t.Error("the cancelled call returned no error")
				}
				// The session still serves calls.
				if res := call(t, cs, ToolExecuteCode, map[string]any{"language": "python", "code": "print ok"}); res.IsError {
					t.Errorf("call after a cancellation: %s", text(res))
				}
			})
		}
	}
}

func TestNewNeedsRunnerAndLanguages(t *testing.T) {
	if _, err := New(Options{Languages: lang.Default()}); err == nil {
		t.Error("New without a Runner succeeded")
	}
	if _, err := New(Options{Runner: newFakeRunner()}); err == nil {
		t.Error("New without languages succeeded")
	}
}
