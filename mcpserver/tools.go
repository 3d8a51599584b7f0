package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/interp"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/multifile"
	"github.com/coderunner/coderunner/runner"
)

// idleHTTPSession is how long an MCP session over HTTP may stay idle.
const idleHTTPSession = time.Hour

// Tool names.
const (
	ToolExecuteCode   = "execute_code"
	ToolJudgeCode     = "judge_code"
	ToolListLanguages = "list_languages"
)

func ptr[T any](v T) *T { return &v }

func (s *Server) addTools() {
	closed := &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}
	s.mcp.AddTool(&mcp.Tool{
		Name:  ToolExecuteCode,
		Title: "Execute code in a sandbox",
		Description: "Run a program in an isolated sandbox (no network, limited memory, CPU, time and output) and return " +
			"its stdout, stderr, exit code, status (success, timeout, execution_error, setup_error) and resource usage. " +
			"Pass the same session_id on several calls to keep the files the program writes in its working directory " +
			"(/workspace) from one call to the next. A call with a progress token gets the program's output while it runs, as " +
			"progress notifications whose message is a chunk of it and whose _meta.stream says stdout or stderr.",
		InputSchema: s.executeSchema(),
		Annotations: closed,
	}, s.executeCode)
	s.mcp.AddTool(&mcp.Tool{
		Name:  ToolJudgeCode,
		Title: "Judge code against test cases",
		Description: "Compile a program once, run it on every test case (the input on stdin, the output compared with " +
			"the expected output, or a checker or an interactor) and return a verdict per test (passed, wrong_answer, runtime_error, timeout, " +
			"memory_exceeded, presentation_error, partial, judge_error) and overall (all_passed, some_passed, all_failed, compilation_error, judge_error, …).",
		InputSchema: s.judgeSchema(),
		Annotations: closed,
	}, s.judgeCode)
	s.mcp.AddTool(&mcp.Tool{
		Name:        ToolListLanguages,
		Title:       "List languages",
		Description: "List the languages execute_code and judge_code accept, with their aliases, whether they are compiled, whether their toolchain is installed here (with its version), and the compiler flags each accepts (regular expressions a whole flag must match).",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, s.listLanguages)
}

// languageNames lists the ids and aliases the table accepts.
func languageNames(t *lang.Table) []string {
	var names []string
	for _, l := range t.All() {
		names = append(names, l.ID)
		for _, a := range l.Aliases {
			names = append(names, strings.ToLower(a))
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func (s *Server) defaults() execute.ExecutionLimits {
	d := execute.DefaultLimits()
	l := s.limits
	if l.TimeLimit == 0 {
		l.TimeLimit = d.TimeLimit
	}
	if l.MemoryLimit == 0 {
		l.MemoryLimit = d.MemoryLimit
	}
	return l.WithDefaults()
}

func (s *Server) languageSchema() map[string]any {
	return map[string]any{
		"type": "string",
		"enum": s.names,
		"description": "Programming language: an id or an alias (" + strings.Join(s.names, ", ") +
			"). list_languages tells which are installed.",
	}
}

func (s *Server) executeSchema() map[string]any {
	d := s.defaults()
	return map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{"language"},
		"properties": map[string]any{
			"language": s.languageSchema(),
			"code": map[string]any{"type": "string",
				"description": "Source code of the program. It is saved as one file in /workspace (main.<ext>) and run there; compiled languages are compiled first (30 s, 512 MB). Required unless files and entry hold the program."},
			"files":     filesSchema(),
			"entry":     entrySchema(),
			"artifacts": artifactsSchema(),
			"stdin":     map[string]any{"type": "string", "description": "Standard input of the program. Default: empty."},
			"timeout": map[string]any{"type": "number", "minimum": execute.MinTimeLimit, "maximum": execute.MaxTimeLimit, "default": d.TimeLimit,
				"description": "Wall-clock time limit of the run in seconds (it also bounds CPU time)."},
			"memory_limit": map[string]any{"type": "integer", "minimum": execute.MinMemoryLimit, "maximum": execute.MaxMemoryLimit, "default": d.MemoryLimit,
				"description": "Memory limit of the program and its children, in MB."},
			"session_id": map[string]any{"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$",
				"description": "Session to run in: files written in /workspace stay for the next call with the same session_id; processes, /tmp and memory are fresh each call. Idle sessions end after a while (30 minutes by default). Omit for a throwaway workspace."},
			"mode": map[string]any{"type": "string", "enum": []string{execute.ModeInterpreter},
				"description": "\"interpreter\": run code as a cell of the session's live Python or JavaScript interpreter (session_id required), which keeps variables, imports and definitions between calls; the result adds value (the repr of the last expression, or null) and display (figures and PNG/SVG files the cell wrote, also returned as image content), and restarted when the interpreter had to be started anew. A cell over its timeout is interrupted and the state kept. Omit to run a program once."},
			"session_ttl_seconds": map[string]any{"type": "integer", "minimum": 1,
				"description": "How long the session (session_id, required) may stay idle before it ends and its files are removed, in seconds; kept for later calls that give none. At most the server's maximum (a day by default)."},

			"args":           argsSchema(),
			"compiler_flags": compilerFlagsSchema(),
			"env":            envSchema(),
		},
	}
}

// argsSchema, compilerFlagsSchema and envSchema describe what both tools
// add to a program beyond its code.
func argsSchema() map[string]any {
	return map[string]any{"type": "array", "maxItems": lang.MaxArgs, "items": map[string]any{"type": "string"},
		"description": "Program arguments, appended to the language's run command (python main.py ARGS, ./main ARGS)."}
}

func compilerFlagsSchema() map[string]any {
	return map[string]any{"type": "array", "maxItems": lang.MaxCompilerFlags,
		"items": map[string]any{"type": "string", "minLength": 1, "maxLength": lang.MaxCompilerFlagBytes, "pattern": "^-"},
		"description": "Flags added to the compile step of a compiled language (c, cpp, java, go, rust), each one argument with its value " +
			"attached: -O0..-O3, -std=c99, -DX=3, -Wall, -g, -fsanitize=address, --release=17, -gcflags=all=-N -l. Only flags of the " +
			"language's allow-list are accepted; flags naming files or programs (-B, -I, -L, -include, -specs, @file, -o, -Wl,...) are refused."}
}

func envSchema() map[string]any {
	return map[string]any{"type": "object", "maxProperties": lang.MaxEnv,
		"propertyNames":        map[string]any{"pattern": "^[A-Z_][A-Z0-9_]*$", "maxLength": lang.MaxEnvNameBytes},
		"additionalProperties": map[string]any{"type": "string"},
		"description":          "Variables added to the program's environment. PATH, HOME, TMPDIR, LANG, LC_ALL, LD_*, the language's own variables and the server's are refused."}
}

func (s *Server) judgeSchema() map[string]any {
	return map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{"language", "test_cases"},
		"properties": map[string]any{
			"request_id": map[string]any{"type": "string", "description": "An id of the caller's, echoed as the result's request_id."},
			"language":   s.languageSchema(),
			"code":       map[string]any{"type": "string", "description": "Source code of the solution; it reads a test's input on stdin and writes the answer on stdout. Required unless files and entry hold the solution."},
			"files":      filesSchema(),
			"entry":      entrySchema(),
			"test_cases": map[string]any{
				"type": "array", "minItems": 1, "maxItems": judge.MaxTests,
				"description": "The tests, run in parallel; results keep this order.",
				"items": map[string]any{
					"type":                 "object",
					"additionalProperties": false,
					"properties": map[string]any{
						"id":              map[string]any{"type": "string", "description": "Name of the test in the result; default test_<index>."},
						"input":           map[string]any{"type": "string", "description": "Standard input of the run."},
						"expected_output": map[string]any{"type": "string", "description": "Expected standard output; a checker gets it as ANSWER; unused (may be omitted) with an interactor."},
						"expected":        map[string]any{"type": "string", "description": "Another name of expected_output; when both are given they must be equal."},
						"is_hidden":       map[string]any{"type": "boolean", "description": "Judge the test without showing its input and outputs in the result."},
						"timeout_ms": map[string]any{"type": "integer", "minimum": judge.MinTimeoutMS, "maximum": judge.MaxTimeoutMS,
							"description": "Time limit of this test, replacing timeout_ms."},
						"description": map[string]any{"type": "string"},
					},
				},
			},
			"timeout_ms": map[string]any{"type": "integer", "minimum": judge.MinTimeoutMS, "maximum": judge.MaxTimeoutMS, "default": judge.DefaultTimeoutMS,
				"description": "Wall-clock time limit of each test, in milliseconds."},
			"total_timeout_ms": map[string]any{"type": "integer", "minimum": judge.MinTotalTimeoutMS, "maximum": judge.MaxTotalTimeoutMS, "default": judge.DefaultTotalTimeoutMS,
				"description": "Time limit of the whole judging, compilation included, in milliseconds."},
			"memory_limit_mb": map[string]any{"type": "integer", "minimum": judge.MinMemoryLimitMB, "maximum": judge.MaxMemoryLimitMB, "default": judge.DefaultMemoryLimitMB,
				"description": "Memory limit of each run, in MB."},
			"compare": map[string]any{"type": "string", "pattern": `^(normalized|exact|tokens|float(:[0-9.eE+-]+)?)$`, "default": judge.CompareNormalized,
				"description": "How outputs are compared: normalized (trailing whitespace and empty lines ignored), exact, tokens (any whitespace run equal) or float:EPS (numbers equal within EPS)."},
			"subtasks":   subtasksSchema(),
			"checker":    toolSchema("Judges each test instead of compare: run as `checker INPUT OUTPUT ANSWER` (the test's input, the program's stdout, the expected output) once the program ended cleanly. Exit 0 accepted, 1 wrong_answer, 2 presentation_error, 7 partial (points 0..1 first on stdout); anything else is judge_error. Its output is the test's checker_message."),
			"interactor": toolSchema("Makes the problem interactive: run as `interactor INPUT OUTPUT`, its stdout piped to the solution's stdin and the solution's stdout to its stdin; its exit code decides as a checker's. Not with checker."),

			"args":           argsSchema(),
			"compiler_flags": compilerFlagsSchema(),
			"env":            envSchema(),
		},
	}
}

// toolSchema describes judge_code's checker or interactor.
func toolSchema(description string) map[string]any {
	return map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{"language", "code"},
		"description":          description,
		"properties": map[string]any{
			"language": map[string]any{"type": "string", "description": "Language id or alias of the program."},
			"code":     map[string]any{"type": "string", "minLength": 1, "description": "Source code of the program."},
		},
	}
}

// subtasksSchema describes judge_code's subtasks, as /v1/judge takes them.
func subtasksSchema() map[string]any {
	return map[string]any{
		"type": "array", "maxItems": judge.MaxSubtasks,
		"description": "Groups of tests worth points. The result then has score, max_score and subtask_results.",
		"items": map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []string{"id", "points", "tests"},
			"properties": map[string]any{
				"id":     map[string]any{"type": "string", "minLength": 1},
				"points": map[string]any{"type": "number", "minimum": 0, "maximum": judge.MaxPoints},
				"tests": map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"type": "string"},
					"description": "Ids of its test cases (test ids must then be unique)."},
				"policy": map[string]any{"type": "string", "enum": []string{judge.PolicyAll, judge.PolicyMin, judge.PolicySum}, "default": judge.PolicyAll,
					"description": "all: the points only when every test passes; min: points times the lowest test score; sum: points times the mean test score."},
				"stop_at_first_failure": map[string]any{"type": "boolean",
					"description": "Once one of its tests fails, skip those of its tests that have not started and that no other subtask needs."},
			},
		},
	}
}

// executeArgs are execute_code's arguments: the fields every front end
// takes, and the memory limit as an argument of its own.
type executeArgs struct {
	execute.RunFields
	MemoryLimit *int `json:"memory_limit"`
}

// request checks the arguments and builds the executor's request. Its
// errors name the argument.
func (s *Server) request(a executeArgs) (execute.Request, error) {
	if a.Language == "" {
		return execute.Request{}, fmt.Errorf("argument \"language\" is required: one of %s", strings.Join(s.names, ", "))
	}
	l, err := s.langs.Lookup(a.Language)
	if err != nil {
		return execute.Request{}, fmt.Errorf("unsupported language %q: use one of %s", a.Language, strings.Join(s.names, ", "))
	}
	if strings.TrimSpace(a.Code) == "" && (len(a.Files) == 0 || a.Entry == "") {
		return execute.Request{}, fmt.Errorf("argument \"code\" is required and must not be empty, unless \"files\" and \"entry\" hold the program")
	}
	limits := s.defaults()
	if a.Timeout != nil {
		t := *a.Timeout
		if math.IsNaN(t) || t < execute.MinTimeLimit || t > execute.MaxTimeLimit {
			return execute.Request{}, fmt.Errorf("argument \"timeout\": %g must be between %d and %d seconds", t, execute.MinTimeLimit, execute.MaxTimeLimit)
		}
		limits.TimeLimit = t
	}
	if a.MemoryLimit != nil {
		m := *a.MemoryLimit
		if m < execute.MinMemoryLimit || m > execute.MaxMemoryLimit {
			return execute.Request{}, fmt.Errorf("argument \"memory_limit\": %d must be between %d and %d MB", m, execute.MinMemoryLimit, execute.MaxMemoryLimit)
		}
		limits.MemoryLimit = m
	}
	if a.SessionID != nil {
		if err := execute.ValidateSessionID(*a.SessionID); err != nil {
			return execute.Request{}, fmt.Errorf("argument \"session_id\": %w", err)
		}
	}
	opts := judge.ProgramOptions{CompilerFlags: a.CompilerFlags, Args: a.Args, Env: a.Env}
	if err := runner.CheckOptions(l, opts); err != nil {
		return execute.Request{}, fmt.Errorf("argument %w", err)
	}
	var ttl time.Duration
	if a.SessionTTLSeconds != nil {
		secs := *a.SessionTTLSeconds
		switch {
		case a.SessionID == nil:
			return execute.Request{}, errors.New("argument \"session_ttl_seconds\" needs a session_id: it is the idle timeout of that session")
		case secs < 1 || secs > int64(math.MaxInt64/time.Second):
			return execute.Request{}, fmt.Errorf("argument \"session_ttl_seconds\": %d must be at least 1", secs)
		}
		ttl = time.Duration(secs) * time.Second
	}
	req := a.Request(limits)
	req.SessionTTL = ttl
	if _, err := execute.CheckRequest(req); err != nil {
		return execute.Request{}, argumentError(err)
	}
	switch {
	case a.Mode == "":
	case a.Mode != execute.ModeInterpreter:
		return execute.Request{}, fmt.Errorf("argument \"mode\": %q is not a mode; use %q or omit it", a.Mode, execute.ModeInterpreter)
	case a.SessionID == nil:
		return execute.Request{}, errors.New("argument \"mode\": \"interpreter\" needs a session_id: the session keeps the interpreter")
	default:
		if err := interp.Check(req); err != nil {
			return execute.Request{}, fmt.Errorf("argument \"mode\": %w", err)
		}
	}
	return req, nil
}

func (s *Server) executeCode(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a executeArgs
	if err := decodeArgs(req.Params.Arguments, &a); err != nil {
		return toolError(err), nil
	}
	er, err := s.request(a)
	if err != nil {
		return toolError(err), nil
	}
	if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
		op := streamOutput(ctx, req.Session, tok, &er)
		defer op.finish()
	}
	res, err := s.runner.Execute(ctx, er)
	if err != nil {
		if ctx.Err() != nil {
			// The client cancelled: it expects no answer, and the SDK
			// sends none.
			return nil, ctx.Err()
		}
		return toolError(argumentError(err)), nil
	}
	out, err := structured(res, executeSummary(res), res.Status == execute.StatusSetupError)
	if err == nil {
		out.Content = append(out.Content, images(res)...)
	}
	return out, err
}

// images are the images a cell showed, as image content.
func images(res *execute.Result) []mcp.Content {
	var c []mcp.Content
	for _, d := range res.Display {
		data, err := base64.StdEncoding.DecodeString(d.Data)
		if err != nil || !strings.HasPrefix(d.MIME, "image/") {
			continue
		}
		c = append(c, &mcp.ImageContent{MIMEType: d.MIME, Data: data})
	}
	return c
}

// executeSummary is the first line of execute_code's text.
func executeSummary(res *execute.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: exit code %d after %.3f s", res.Status, res.ExitCode, res.ExecutionTime)
	if msg := res.Message(); msg != "" {
		fmt.Fprintf(&b, " (%s)", strings.TrimSuffix(msg, "."))
	}
	fmt.Fprintf(&b, "; stdout %d bytes, stderr %d bytes", len(res.Stdout), len(res.Stderr))
	if res.Truncated {
		b.WriteString(" (truncated)")
	}
	if res.SessionID != nil {
		fmt.Fprintf(&b, "; session %s", *res.SessionID)
	}
	if res.Interpreter {
		if res.Value != nil {
			v := *res.Value
			if len(v) > 200 {
				v = v[:200] + "…"
			}
			fmt.Fprintf(&b, "; value %s", v)
		}
		if n := len(res.Display); n > 0 {
			fmt.Fprintf(&b, "; %d image(s)", n)
		}
		if res.Restarted {
			b.WriteString("; the interpreter restarted")
		}
	}
	if n := len(res.Artifacts); n > 0 {
		fmt.Fprintf(&b, "; %d file(s) written", n)
	}
	return b.String()
}

// judgeArgs are judge_code's arguments.
type judgeArgs struct {
	Language       string           `json:"language"`
	Code           string           `json:"code"`
	TestCases      []judge.TestCase `json:"test_cases"`
	TimeoutMS      int              `json:"timeout_ms"`
	TotalTimeoutMS int              `json:"total_timeout_ms"`
	MemoryLimitMB  int              `json:"memory_limit_mb"`
	Compare        string           `json:"compare"`
	RequestID      string           `json:"request_id"`
	Subtasks       []judge.Subtask  `json:"subtasks"`
	Checker        *judge.Tool      `json:"checker"`
	Interactor     *judge.Tool      `json:"interactor"`

	Files []multifile.File `json:"files"`
	Entry string           `json:"entry"`

	Args          []string          `json:"args"`
	CompilerFlags []string          `json:"compiler_flags"`
	Env           map[string]string `json:"env"`
}

func (s *Server) judgeCode(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a judgeArgs
	if err := decodeArgs(req.Params.Arguments, &a); err != nil {
		return toolError(err), nil
	}
	jr := judge.ExecutionRequest{
		RequestID: a.RequestID, Language: a.Language, Code: a.Code, TestCases: a.TestCases,
		TimeoutMS: a.TimeoutMS, TotalTimeoutMS: a.TotalTimeoutMS, MemoryLimitMB: a.MemoryLimitMB, Compare: a.Compare,
		Subtasks: a.Subtasks, Checker: a.Checker, Interactor: a.Interactor,
		Files: a.Files, Entry: a.Entry,
		Args: a.Args, CompilerFlags: a.CompilerFlags, Env: a.Env,
	}
	if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
		ctx = withProgress(ctx, &progress{session: req.Session, token: tok, total: len(a.TestCases)})
	}
	res := s.judge.Execute(ctx, jr)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return structured(res, judgeSummary(res), res.Status == judge.StatusSandboxError)
}

// judgeSummary is the first line of judge_code's text.
func judgeSummary(res judge.ExecutionResult) string {
	line := fmt.Sprintf("%s: %s", res.Status, res.Summary)
	if res.Score != nil && res.MaxScore != nil {
		line += fmt.Sprintf("; score %g/%g", *res.Score, *res.MaxScore)
	}
	if res.ErrorInfo != nil && res.ErrorInfo.Message != "" && !strings.Contains(res.Summary, res.ErrorInfo.Message) {
		line += " (" + res.ErrorInfo.Message + ")"
	}
	return line
}

// languageList is list_languages' structured result.
type languageList struct {
	Languages []lang.Info `json:"languages"`
}

func (s *Server) listLanguages(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var none struct{}
	if err := decodeArgs(req.Params.Arguments, &none); err != nil {
		return toolError(err), nil
	}
	out := languageList{Languages: s.langs.Describe(ctx)}
	var avail []string
	for _, l := range out.Languages {
		if l.Available {
			avail = append(avail, l.ID)
		}
	}
	summary := fmt.Sprintf("%d languages, %d available here: %s", len(out.Languages), len(avail), strings.Join(avail, ", "))
	return structured(out, summary, false)
}

// structured is a tool result carrying v as structured content and, as
// text, the summary line followed by the same JSON.
func structured(v any, summary string, isError bool) (*mcp.CallToolResult, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Programs print <, > and &: escaping them would only make the text
	// harder to read.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("unable to encode the result: %w", err)
	}
	data := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: summary + "\n" + string(data)}},
		StructuredContent: encodedJSON(data),
		IsError:           isError,
	}, nil
}

// toolError is a refused call: isError with the message as text.
func toolError(err error) *mcp.CallToolResult {
	var r mcp.CallToolResult
	r.SetError(err)
	return &r
}
