package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/coderunner/coderunner/internal/assembly"
	"github.com/coderunner/coderunner/mcpserver"
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
	// A long-lived server: one sandbox started ahead of each call. With
	// no backend it serves anyway (KeepGoing): an MCP host shows a server
	// that fails to start as a bare error, while a tool result tells the
	// agent why.
	parts, err := assembly.Open(ctx, assembly.Options{
		Config: cfg, Logger: log, Registry: a.Registry, Backend: c.backend, Warm: 1, KeepGoing: true,
		Executor: true, Sessions: true, Engine: true, TmpSeeds: true,
	})
	if err != nil {
		return a.fail("mcp", "%v", err)
	}
	defer parts.Close()
	if parts.BackendErr != nil {
		log.Error("no sandbox backend works here; every run will fail", "error", parts.BackendErr)
	}
	if parts.EngineErr != nil {
		log.Warn("the judge is unavailable", "error", parts.EngineErr)
	}
	mo := mcpserver.Options{
		Runner:       parts.Runner(),
		Languages:    parts.Languages,
		Engine:       parts.JudgeEngine(),
		EngineErr:    parts.EngineErr,
		JudgeOptions: parts.JudgeOptions(),
		Limits:       parts.DefaultLimits(),
		Version:      a.Version,
		Logger:       log,
	}
	if parts.Sessions != nil {
		// Not a nil *session.Store in the interface: no files tools
		// without sessions.
		mo.Files = parts.Sessions
	}
	srv, err := mcpserver.New(mo)
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
