package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/coderunner/coderunner"
	"github.com/coderunner/coderunner/mcpserver"
	"github.com/coderunner/coderunner/sandbox"
)

const mcpAbout = `Serve coderunner to an AI agent over the Model Context Protocol on stdin and
stdout: the tools execute_code, judge_code and list_languages. MCP hosts start
it as a subprocess; logs go to stderr. It needs nothing from the environment
but HOME and PATH.`

func (a *App) mcpCmd(ctx context.Context, args []string) int {
	fs, c := a.flagSet("mcp", "", mcpAbout, true)
	pos, code, done := a.parse(fs, c, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return a.fail("mcp", "unexpected argument %q", pos[0])
	}
	cfg, log, err := a.setup(fs, c)
	if err != nil {
		return a.fail("mcp", "%v", err)
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		// The SDK's JSON decoder allocates ~100 KB per message against a
		// live heap of a few MB: at the default GOGC, collections double
		// the protocol's cost per call (measured by tools/mcpbench).
		debug.SetGCPercent(mcpGCPercent)
	}
	opts := backendOptions(cfg, log)
	// A long-lived server: one sandbox started ahead of each call.
	opts.Warm = 1
	b, err := a.Registry.Open(ctx, c.backend, opts)
	if err != nil {
		// Serve anyway: an MCP host shows a server that fails to start
		// as a bare error, while a tool result tells the agent why.
		log.Error("no sandbox backend works here; every run will fail", "error", err)
		b = brokenBackend{err: err}
	}
	if cl, ok := b.(io.Closer); ok {
		defer cl.Close()
	}
	cr, err := coderunner.New(ctx, coderunner.Options{Sandbox: b, ConfigFile: c.config, LookupEnv: a.LookupEnv, Logger: log})
	if err != nil {
		return a.fail("mcp", "%v", err)
	}
	defer cr.Close()
	engine, engineErr := cr.Engine()
	srv, err := mcpserver.New(mcpserver.Options{
		Runner:       cr.Executor(),
		Languages:    cr.Languages(),
		Engine:       engine,
		EngineErr:    engineErr,
		JudgeOptions: cr.JudgeOptions(),
		Limits:       cr.DefaultLimits(),
		Version:      a.Version,
		Logger:       log,
	})
	if err != nil {
		return a.fail("mcp", "%v", err)
	}
	in, restore := pollableInput(a.Stdin)
	defer restore()
	t := &mcpserver.LineTransport{Reader: in, Writer: nopWriteCloser{a.Stdout}}
	if err := srv.Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		fmt.Fprintf(a.Stderr, "coderunner mcp: %v\n", err)
		return ExitFailure
	}
	return ExitOK
}

// mcpGCPercent is the GOGC of coderunner mcp unless GOGC is set.
const mcpGCPercent = 400

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// brokenBackend fails every run with the reason no backend could be
// opened.
type brokenBackend struct{ err error }

func (brokenBackend) Name() string { return "none" }

func (b brokenBackend) Run(context.Context, *sandbox.Spec) (*sandbox.Result, error) {
	return nil, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, b.err)
}
