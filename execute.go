package coderunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/session"
)

// Result is the outcome of one execution; its JSON is the object /v1/run
// and the execute_code MCP tool answer.
type Result = execute.Result

// ResourceUsage is what a run consumed (its resource_usage).
type ResourceUsage = execute.ResourceUsage

// LimitsApplied echoes the limits a run was held to.
type LimitsApplied = execute.LimitsApplied

// Artifact is a file a program left in its workspace.
type Artifact = execute.Artifact

// Status is the overall outcome of an execution.
type Status = execute.Status

// The statuses of an execution.
const (
	StatusSuccess        = execute.StatusSuccess
	StatusTimeout        = execute.StatusTimeout
	StatusExecutionError = execute.StatusExecutionError
	StatusSetupError     = execute.StatusSetupError
)

// ExecutionLimits bounds one execution: time
// in seconds (1–300, default 30), memory in MB (default 256), CPU cores
// (default 0.5), output characters per stream (default 100000) and
// processes (default 50). A zero field takes its default; Validate refuses
// an out-of-range field with a message naming it, e.g. "invalid execution
// limits: memory_limit 8 must be between 16 and 8192 MB".
type ExecutionLimits = execute.ExecutionLimits

// DefaultLimits returns the default limits of a run.
func DefaultLimits() ExecutionLimits { return execute.DefaultLimits() }

// Option adds an optional argument to ExecuteCode, ExecuteWithLimits and
// SandboxProcessIsolation.
type Option func(*call)

// call is the optional arguments of one execution.
type call struct {
	stdin          string
	timeout        time.Duration
	session        *string
	sessionTTL     time.Duration
	stdout, stderr io.Writer

	files     []File
	entry     string
	artifacts ArtifactOptions

	args, compilerFlags []string
	env                 map[string]string
	interpreter         bool
}

// WithStdin gives the program s as its standard input (default: empty).
func WithStdin(s string) Option { return func(c *call) { c.stdin = s } }

// WithTimeout sets the time limit of the run (1 to 300 seconds, default
// 30); with ExecuteWithLimits it replaces
// limits.TimeLimit.
func WithTimeout(d time.Duration) Option { return func(c *call) { c.timeout = d } }

// WithSession runs the call in the session id: files written in
// /workspace by earlier calls of the session are there.
func WithSession(id string) Option { return func(c *call) { c.session = &id } }

// WithSessionTTL sets the idle timeout of the session WithSession names:
// it ends, its files removed, once unused for d (from 1 s to the
// configuration's sessions.max_idle_timeout, a day by default). Later
// calls that give none keep it.
func WithSessionTTL(d time.Duration) Option { return func(c *call) { c.sessionTTL = d } }

// WithInterpreter runs code as a cell of the live Python or JavaScript
// interpreter of the session WithSession names (needed), which keeps
// variables, imports and definitions from one call to the next: the
// Result's Value is the repr of the cell's last expression (nil after a
// statement; in JavaScript its completion value), its Display
// the figures and PNG/SVG files the cell made. A cell over its time limit
// is interrupted and the interpreter's state kept; one that does not stop
// ends its interpreter, and the next call's Result has Restarted set. A
// cell takes no stdin, files, arguments, compiler flags or environment
// (ErrInvalidMode). RestartInterpreter starts the session's anew.
func WithInterpreter() Option { return func(c *call) { c.interpreter = true } }

// WithOutput streams the program's stdout and stderr to the writers as it
// runs, in addition to the copies in the Result; a nil writer streams
// nothing of its stream. It is WithStdout(stdout) and WithStderr(stderr).
func WithOutput(stdout, stderr io.Writer) Option {
	return func(c *call) { c.stdout, c.stderr = stdout, stderr }
}

// WithStdout streams the program's standard output to w as the sandbox
// reads it, in addition to the copy in Result.Stdout: w sees the same
// bytes (at most the output limit, MaxOutputChars), in pieces as they
// come, each write made before the next piece is read. Writes to w come
// from another goroutine than the caller's, one at a time; a slow w
// slows the program's output, and its errors are ignored. A compiled
// language's compiler output goes to the WithStderr writer when the
// compilation fails.
func WithStdout(w io.Writer) Option { return func(c *call) { c.stdout = w } }

// WithStderr streams the program's standard error to w as WithStdout
// streams its standard output. The two writers are called from different
// goroutines, possibly at once: a writer given to both must be safe for
// concurrent use.
func WithStderr(w io.Writer) Option { return func(c *call) { c.stderr = w } }

// WithArgs gives the program args as its arguments, after those its
// language's run command has (python main.py ARGS, ./main ARGS). At most
// lang.MaxArgs arguments, lang.MaxArgsBytes together, none with a NUL
// byte.
func WithArgs(args ...string) Option { return func(c *call) { c.args = args } }

// WithCompilerFlags adds flags to the compile step of a compiled
// language, such as "-O0", "-std=c99", "-DX=3" or "-Wall". Each must match
// the language's allow-list (`coderunner langs --json` lists it); flags
// that could make the compiler read or write files or run programs are
// refused whatever the list says, and so is any flag for a language
// without a compile step.
func WithCompilerFlags(flags ...string) Option { return func(c *call) { c.compilerFlags = flags } }

// WithEnv adds variables to the program's environment. Names match
// ^[A-Z_][A-Z0-9_]*$; PATH, HOME, TMPDIR, LANG, LC_ALL, LD_*, CODERUNNER_*,
// the names the language's recipe sets and the server's own variables
// are refused. At most lang.MaxEnv variables, lang.MaxEnvBytes together.
func WithEnv(env map[string]string) Option { return func(c *call) { c.env = env } }

// ExecuteCode runs code with the default CodeRunner; see
// CodeRunner.ExecuteCode.
func ExecuteCode(ctx context.Context, language, code string, opts ...Option) (*Result, error) {
	c, err := Default()
	if err != nil {
		return unavailable(language, err, opts)
	}
	return c.ExecuteCode(ctx, language, code, opts...)
}

// ExecuteWithLimits runs code under limits with the default CodeRunner;
// see CodeRunner.ExecuteWithLimits.
func ExecuteWithLimits(ctx context.Context, language, code string, limits ExecutionLimits, opts ...Option) (*Result, error) {
	c, err := Default()
	if err != nil {
		return unavailable(language, err, opts)
	}
	return c.ExecuteWithLimits(ctx, language, code, limits, opts...)
}

// ExecuteCode runs code in language with
// the default limits (or the configuration's), and the options' stdin,
// timeout, session, arguments, compiler flags and environment. The Result is never nil; the error is non-nil when
// the request was refused or ctx ended, and the Result then has status
// setup_error and the message.
func (c *CodeRunner) ExecuteCode(ctx context.Context, language, code string, opts ...Option) (*Result, error) {
	return c.ExecuteWithLimits(ctx, language, code, ExecutionLimits{}, opts...)
}

// ExecuteWithLimits is ExecuteCode under
// limits, whose zero fields take the defaults. The Result reports the
// resource usage measured while the program ran and the limits applied.
func (c *CodeRunner) ExecuteWithLimits(ctx context.Context, language, code string, limits ExecutionLimits, opts ...Option) (*Result, error) {
	req := c.request(language, code, limits, opts)
	res, err := c.parts.Runner().Execute(ctx, req)
	if err != nil {
		return refused(req, c.parts.Backend.Name(), c.parts.Languages, err)
	}
	return res, nil
}

// request builds the executor's request from the arguments.
func (c *CodeRunner) request(language, code string, limits ExecutionLimits, opts []Option) execute.Request {
	var a call
	for _, o := range opts {
		o(&a)
	}
	limits = c.parts.DefaultLimits().Overlay(limits)
	if a.timeout != 0 {
		limits.TimeLimit = a.timeout.Seconds()
	}
	return execute.Request{
		Language:   language,
		Code:       code,
		Stdin:      a.stdin,
		Limits:     limits,
		SessionID:  a.session,
		SessionTTL: a.sessionTTL,
		Stdout:     a.stdout,
		Stderr:     a.stderr,
		Files:      a.files,
		Entry:      a.entry,
		Artifacts:  a.artifacts,

		Args:          a.args,
		CompilerFlags: a.compilerFlags,
		Env:           a.env,
		Mode:          mode(a.interpreter),
	}
}

func mode(interpreter bool) string {
	if interpreter {
		return execute.ModeInterpreter
	}
	return ""
}

// Display is one image a cell showed (Result.Display).
type Display = execute.Display

// RestartInterpreter ends the interpreter of session id (WithInterpreter),
// after the call running in it; its files stay and the next call starts a
// fresh interpreter. It fails with ErrSessionNotFound for an unknown
// session.
func (c *CodeRunner) RestartInterpreter(ctx context.Context, id string) error {
	if c.parts.Sessions == nil {
		return session.ErrDisabled
	}
	return c.parts.Sessions.Restart(ctx, id)
}

// refused is the Result of a request that did not run: status
// setup_error, exit code -1 and the refusal's message, with the error.
func refused(req execute.Request, backendName string, langs *lang.Table, err error) (*Result, error) {
	msg := err.Error()
	switch {
	case errors.Is(err, lang.ErrUnknownLanguage):
		msg = fmt.Sprintf("Unsupported language: %s. Supported languages: %s.", req.Language, strings.Join(langs.IDs(), ", "))
		err = fmt.Errorf("%w: %w", ErrUnsupportedLanguage, err)
	case errors.Is(err, ErrEmptyCode):
		msg = "Code must be a non-empty string."
	case errors.Is(err, ErrBackendUnavailable):
		msg = "No sandbox backend is available on this system: " + err.Error()
	}
	res := execute.SetupErrorResult(req, backendName, err)
	res.ErrorMessage = &msg
	return res, err
}

// unavailable is the Result of a call made when no CodeRunner could be
// made.
func unavailable(language string, err error, opts []Option) (*Result, error) {
	var a call
	for _, o := range opts {
		o(&a)
	}
	req := execute.Request{Language: language, SessionID: a.session}
	if !errors.Is(err, ErrBackendUnavailable) {
		err = fmt.Errorf("%w: %w", ErrBackendUnavailable, err)
	}
	return refused(req, "", nil, err)
}
