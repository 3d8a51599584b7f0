package mcpserver

import (
	"context"
	"errors"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
)

// Name is the server's name in the MCP handshake.
const Name = "coderunner"

// Runner runs single executions. The session-aware executor of package
// session (Store.Wrap) is the one to give, so that session_id keeps files.
type Runner interface {
	Execute(ctx context.Context, req execute.Request) (*execute.Result, error)
}

// Options configure a Server.
type Options struct {
	// Runner runs execute_code; required.
	Runner Runner
	// Languages is the language table; required.
	Languages *lang.Table
	// Engine runs judge_code; nil makes judge_code answer that the judge
	// is unavailable, with EngineErr as the reason.
	Engine    judge.Engine
	EngineErr error
	// JudgeOptions configure the judge of judge_code.
	JudgeOptions judge.Options
	// Limits are the defaults of execute_code's limits; zero fields take
	// execute.DefaultLimits'.
	Limits execute.ExecutionLimits
	// Files, when set, serves write_file, read_file and list_files on
	// the sessions' workspaces; nil leaves those tools out.
	Files Files
	// Version is reported in the handshake.
	Version string
	// Logger receives the SDK's and the server's logs; nil discards them.
	Logger *slog.Logger
}

// Server is coderunner's MCP server. One Server serves any number of
// clients, over any number of transports, concurrently.
type Server struct {
	mcp    *mcp.Server
	runner Runner
	files  Files
	langs  *lang.Table
	judge  *judge.Judge
	limits execute.ExecutionLimits
	names  []string
	log    *slog.Logger
}

// New builds the server and its tools.
func New(opts Options) (*Server, error) {
	if opts.Runner == nil {
		return nil, errors.New("mcpserver: no Runner")
	}
	if opts.Languages == nil {
		return nil, errors.New("mcpserver: no language table")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	engine := opts.Engine
	if engine == nil {
		engine = unavailableEngine{opts.EngineErr}
	}
	jo := opts.JudgeOptions
	if jo.Logger == nil {
		jo.Logger = log
	}
	s := &Server{
		runner: opts.Runner,
		files:  opts.Files,
		langs:  opts.Languages,
		judge:  judge.New(progressEngine{engine}, jo),
		limits: opts.Limits,
		names:  languageNames(opts.Languages),
		log:    log,
	}
	instr := instructions
	if opts.Files != nil {
		instr += "\n" + filesInstructions
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: Name, Title: "coderunner sandbox", Version: version}, &mcp.ServerOptions{
		Logger:       log,
		Instructions: instr,
	})
	s.addTools()
	s.addFileTools()
	return s, nil
}

// instructions tell the client's model what the server is for.
const instructions = `coderunner runs untrusted code in an isolated sandbox (no network, capped memory, CPU, time and output).
Use execute_code to run a program and see its output; pass the same session_id across calls to keep files in /workspace.
Use judge_code to check a solution against test cases. Use list_languages to see what is installed.`

// filesInstructions tell it about the files tools, when they are served.
const filesInstructions = `Use write_file to put a file into a session's /workspace before execute_code, read_file to get one back (text, or base64 for binary), list_files to see them with their sha256.`

// MCP returns the SDK server, for transports this package does not set up.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one client over t until the client disconnects or ctx ends.
// Over a LineTransport, plain execute_code calls are answered by the
// transport (see directCalls), everything else by the SDK's server.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	if lt, ok := t.(*LineTransport); ok {
		t = &LineTransport{Reader: lt.Reader, Writer: lt.Writer, direct: s}
	}
	return s.mcp.Run(ctx, t)
}

// ServeStdio serves one client over the process's stdin and stdout.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.Run(ctx, &mcp.StdioTransport{})
}
