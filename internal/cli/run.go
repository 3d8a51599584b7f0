package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/assembly"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
)

const runAbout = `Execute one program in the sandbox, under limits.
The code comes from FILE, or from standard input with "-" (then --lang is needed).
A program of several files is a DIR (every file beneath it but hidden ones and
links) or several FILEs; it runs the --entry file (default: the first FILE, or
the directory's main.<ext>), and a compiled language compiles every source.
Arguments after -- are the program's (coderunner run main.py -- a b).
Compiled languages are compiled first under the compile limits (30 s, 512 MB);
--timeout covers the run only.

--session keeps a session's files between runs, not its variables: run ends
with its program, so it cannot keep an interpreter alive between calls. For
interpreter sessions (a live Python or JavaScript interpreter per session),
use coderunner serve (HTTP, "mode": "interpreter") or coderunner mcp.

Without --json the program's stdout and stderr stream through and coderunner
exits with the program's exit code: 124 when it timed out, 137 when it was
killed for its memory, 125 when the sandbox itself failed, 2 for bad usage.
With --json it prints the execute_with_limits result object and exits 0
(125 when the sandbox failed).`

// runFlags are the flags of run, as the contract lists them.
type runFlags struct {
	lang      string
	stdin     string
	timeout   time.Duration
	memory    int
	cpus      float64
	pids      int
	maxOutput int
	session   string
	rawOutput bool
	program   programFlags
	args      []string

	entry           string
	artifactContent bool
	artifactBytes   int64
}

func (a *App) runCmd(ctx context.Context, args []string) int {
	fs, c := a.flagSet("run", "FILE|DIR|-|FILE... [-- ARGS...]", runAbout, true)
	var f runFlags
	fs.StringVar(&f.lang, "lang", "", "language `ID` or alias (default: from the file extension; required with -)")
	fs.StringVar(&f.stdin, "stdin", "", "`FILE` given to the program as standard input (- for coderunner's own stdin; default: empty)")
	fs.Func("timeout", "time limit of the run: a `DURATION` (30s, 1500ms) or a number of seconds, 1 to 300 s (default 30s)",
		func(s string) error {
			d, err := parseTimeout(s)
			f.timeout = d
			return err
		})
	fs.IntVar(&f.memory, "memory", 0, "memory limit in `MB`, 16 to 8192 (default 256)")
	fs.Float64Var(&f.cpus, "cpus", 0, "CPU bandwidth in `CORES`, more than 0 and at most this machine's cores (default 0.5)")
	fs.IntVar(&f.pids, "pids", 0, "most processes and threads, `N` from 1 to 1024 (default 50)")
	fs.IntVar(&f.maxOutput, "max-output", 0, "cap of stdout and of stderr, each, in `CHARS` (bytes), 1 to 10000000 (default 100000); over it the program is stopped")
	fs.StringVar(&f.session, "session", "", "session `ID` (letters, digits, _ and -, at most 64): the files the program writes in /workspace "+
		"stay for the next run with the same ID (kept under $XDG_STATE_HOME/coderunner/sessions, or /var/lib/coderunner/sessions as root; "+
		"one run at a time per session; removed after sessions.idle_timeout unused). Files only: each run is a new process, "+
		"so variables do not carry over; a live Python or JavaScript interpreter kept between calls (the interpreter mode) "+
		"is served by coderunner serve (HTTP) and coderunner mcp")
	fs.StringVar(&f.entry, "entry", "", "with a DIR or several FILEs, the `PATH` (relative to the directory) of the file to run or compile")
	fs.BoolVar(&f.artifactContent, "artifact-content", false, "with --json, return the contents (base64) of the files the program leaves in /workspace")
	fs.Int64Var(&f.artifactBytes, "artifact-max-bytes", 0, fmt.Sprintf("with --artifact-content, most `BYTES` of content returned, all files together, 1 to %d (default %d)",
		execute.MaxArtifactContentBytes, execute.DefaultArtifactContentBytes))
	fs.BoolVar(&f.rawOutput, "raw-output", false, "pass the program's control characters and escape sequences through to a terminal "+
		"(by default, on a terminal, they are shown as \\x1b, \\u009b and the like, so that the program cannot drive the terminal)")
	f.program.add(fs)

	pos, rest, code, done := a.parseDash(fs, c, args)
	if done {
		return code
	}
	if !f.rawOutput {
		defer a.sanitizeTerminals()()
	}
	files, progArgs, err := filesAndArgs(pos, rest)
	if err != nil {
		return a.fail("run", "%v", err)
	}
	f.args = progArgs
	cfg, log, err := a.setup(fs, c)
	if err != nil {
		return a.fail("run", "%v", err)
	}
	langs, err := cfg.LanguageTable()
	if err != nil {
		return a.fail("run", "--config: %v", err)
	}

	req, err := a.runRequest(fs, &f, cfg, langs, files)
	if err != nil {
		return a.fail("run", "%v", err)
	}

	parts, err := assembly.Open(ctx, assembly.Options{
		Config: cfg, Logger: log, Registry: a.Registry, Backend: c.backend, Languages: langs, Executor: true,
	})
	if err != nil {
		var pe *assembly.Error
		if errors.As(err, &pe) && pe.Part == assembly.PartBackend {
			return a.report(c, execute.SetupErrorResult(req, c.backend, pe.Err))
		}
		return a.fail("run", "%v", err)
	}
	// Backends that keep sandboxes warm release them here.
	defer parts.Close()
	if !c.json {
		req.Stdout, req.Stderr = a.Stdout, a.Stderr
	}
	var res *execute.Result
	if req.SessionID != nil {
		res, err = a.runInSession(ctx, parts, req)
	} else {
		res, err = parts.Executor.Execute(ctx, req)
	}
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(a.Stderr, "coderunner run: interrupted")
		return ExitInterrupted
	case err != nil:
		return a.fail("run", "%v", err)
	}
	return a.report(c, res)
}

// runInSession runs req in its session's workspace, which stays on disk
// for the next run: coderunner run lives for one call, so its sessions
// cannot be those of an in-memory session.Store.
func (a *App) runInSession(ctx context.Context, parts *assembly.Parts, req execute.Request) (*execute.Result, error) {
	store, err := parts.DiskSessions(a.sessionDir)
	if err != nil {
		return nil, fmt.Errorf("--session: %w", err)
	}
	res, err := store.Execute(ctx, parts.Executor, req)
	if err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("--session: %w", err)
	}
	return res, err
}

// sessionDir is where run keeps its sessions: under $XDG_STATE_HOME, else
// /var/lib/coderunner for root and ~/.local/state for anyone else.
func (a *App) sessionDir() (string, error) {
	if v, ok := a.LookupEnv("XDG_STATE_HOME"); ok && filepath.IsAbs(v) {
		return filepath.Join(v, "coderunner", "sessions"), nil
	}
	if os.Geteuid() == 0 {
		return "/var/lib/coderunner/sessions", nil
	}
	home, ok := a.LookupEnv("HOME")
	if !ok || !filepath.IsAbs(home) {
		return "", errors.New("no place to keep sessions: set HOME or XDG_STATE_HOME to an absolute path")
	}
	return filepath.Join(home, ".local", "state", "coderunner", "sessions"), nil
}

// runRequest builds the request from the flags, the configuration's
// defaults and the code. Its errors name the flag at fault.
func (a *App) runRequest(fs *flag.FlagSet, f *runFlags, cfg *config.Config, langs *lang.Table, pos []string) (execute.Request, error) {
	var req execute.Request
	file := pos[0]
	var prog *program
	if len(pos) > 1 || isDir(file) {
		var err error
		if prog, err = readProgram(pos, f.entry, langs); err != nil {
			return req, err
		}
		file = prog.entry
	} else if f.entry != "" {
		return req, errors.New("--entry: only with a DIR or several FILEs")
	}
	fromStdin := file == "-"
	l, err := runLanguage(f, langs, file)
	if err != nil {
		return req, err
	}
	req.Language = l.ID
	if f.lang != "" {
		req.Language = f.lang
	}
	req.Args, req.CompilerFlags, req.Env = f.args, f.program.compilerFlags, f.program.envMap()
	if err := checkProgramFlags(l, req.Args, req.CompilerFlags, req.Env); err != nil {
		return req, err
	}

	if req.Limits, err = runLimits(fs, f, cfg); err != nil {
		return req, err
	}

	if isSet(fs, "session") {
		if err := execute.ValidateSessionID(f.session); err != nil {
			return req, fmt.Errorf("--session: %w", err)
		}
		id := f.session
		req.SessionID = &id
	}

	if req.Artifacts, err = artifactOptions(f); err != nil {
		return req, err
	}

	var code []byte
	switch {
	case prog != nil:
		req.Files, req.Entry = prog.files, prog.entry
		if _, err := execute.CheckRequest(req); err != nil {
			return req, err
		}
	case fromStdin:
		code, err = readBounded(a.Stdin, MaxInputBytes, "the code on stdin")
	default:
		code, err = readFileBounded(file, MaxInputBytes)
	}
	if err != nil {
		return req, err
	}
	req.Code = string(code)

	switch {
	case f.stdin == "-" && fromStdin:
		return req, errors.New("--stdin: - cannot be used when the code also comes from stdin")
	case f.stdin == "-":
		in, err := readBounded(a.Stdin, MaxInputBytes, "stdin")
		if err != nil {
			return req, fmt.Errorf("--stdin: %w", err)
		}
		req.Stdin = string(in)
	case f.stdin != "":
		in, err := readFileBounded(f.stdin, MaxInputBytes)
		if err != nil {
			return req, fmt.Errorf("--stdin: %w", err)
		}
		req.Stdin = string(in)
	}
	return req, nil
}

// runLanguage is the language of run's program: --lang, else that of
// file (the entry of several files) by its extension.
func runLanguage(f *runFlags, langs *lang.Table, file string) (*lang.Language, error) {
	switch {
	case f.lang != "":
		l, err := langs.Lookup(f.lang)
		if err != nil {
			return nil, fmt.Errorf("--lang: %w", err)
		}
		return l, nil
	case file == "-":
		return nil, errors.New("--lang is required when the code comes from stdin (-)")
	}
	l, err := langs.ForFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w; name it with --lang", err)
	}
	return l, nil
}

// checkProgramFlags checks the program's arguments, compiler flags and
// environment for l, naming the flag at fault.
func checkProgramFlags(l *lang.Language, args, flags []string, env map[string]string) error {
	err := runner.CheckOptions(l, judge.ProgramOptions{CompilerFlags: flags, Args: args, Env: env})
	var oe *lang.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	switch {
	case strings.HasPrefix(oe.Field, "compiler_flags"):
		return fmt.Errorf("--compiler-flag: %s", oe.Reason)
	case strings.HasPrefix(oe.Field, "env"):
		if name := strings.TrimPrefix(strings.TrimPrefix(oe.Field, "env"), "."); name != "" {
			return fmt.Errorf("--env %s: %s", name, oe.Reason)
		}
		return fmt.Errorf("--env: %s", oe.Reason)
	}
	return fmt.Errorf("the program's arguments (after --): %w", oe)
}

// artifactOptions are the artifact flags as a request's options.
func artifactOptions(f *runFlags) (execute.ArtifactOptions, error) {
	if f.artifactBytes != 0 && !f.artifactContent {
		return execute.ArtifactOptions{}, errors.New("--artifact-max-bytes: only with --artifact-content")
	}
	o := execute.ArtifactOptions{IncludeContent: f.artifactContent, MaxBytes: f.artifactBytes}
	if err := o.Validate(); err != nil {
		return o, fmt.Errorf("--artifact-max-bytes: %w", err)
	}
	return o, nil
}

// limitFlags maps the fields of ExecutionLimits to the flag that sets
// them and the configuration key of their default.
var limitFlags = map[string][2]string{
	"time_limit":       {"timeout", "limits.run.timeout"},
	"memory_limit":     {"memory", "limits.run.memory_mb"},
	"cpu_limit":        {"cpus", "limits.run.cpu_cores"},
	"max_output_chars": {"max-output", "limits.run.max_output_chars"},
	"pids":             {"pids", "limits.run.max_processes"},
}

// runLimits starts from the configuration's defaults and applies the
// flags given. An out-of-range value is refused naming the flag, or the
// configuration key when the value came from there.
func runLimits(fs *flag.FlagSet, f *runFlags, cfg *config.Config) (execute.ExecutionLimits, error) {
	l := assembly.DefaultLimits(cfg)
	if isSet(fs, "timeout") {
		l.TimeLimit = f.timeout.Seconds()
	}
	if isSet(fs, "memory") {
		l.MemoryLimit = f.memory
	}
	if isSet(fs, "cpus") {
		l.CPULimit = f.cpus
	}
	if isSet(fs, "pids") {
		l.Pids = f.pids
	}
	if isSet(fs, "max-output") {
		l.MaxOutputChars = f.maxOutput
	}
	err := l.Validate()
	var le *execute.LimitError
	if errors.As(err, &le) {
		names, ok := limitFlags[le.Field]
		if !ok {
			return l, err
		}
		if isSet(fs, names[0]) {
			if le.Field == "time_limit" {
				return l, fmt.Errorf("--timeout: %s must be between 1s and 300s", f.timeout)
			}
			return l, fmt.Errorf("--%s: %s", names[0], le.Reason)
		}
		return l, fmt.Errorf("configuration %s: %s", names[1], le.Reason)
	}
	return l, err
}

// report prints the result as the flags ask and returns the exit status.
func (a *App) report(c *common, res *execute.Result) int {
	if c.json {
		if err := writeJSON(a.Stdout, res); err != nil {
			fmt.Fprintf(a.Stderr, "coderunner run: %v\n", err)
			return ExitFailure
		}
		if res.Status == execute.StatusSetupError {
			return ExitSandbox
		}
		return ExitOK
	}
	for _, w := range res.Warnings {
		if w == execute.NotUTF8Warning("stdout") || w == execute.NotUTF8Warning("stderr") {
			continue // the output passed through as it is, not as JSON
		}
		fmt.Fprintf(a.Stderr, "coderunner: warning: %s\n", w)
	}
	switch {
	case res.Status == execute.StatusSuccess:
	case res.Stage == execute.StageRun && res.Verdict == sandbox.StatusNonzeroExit:
		// A non-zero exit speaks for itself through the exit status.
	default:
		fmt.Fprintf(a.Stderr, "coderunner: %s\n", res.Message())
	}
	return exitStatus(res)
}

// exitStatus is the exit status of run without --json.
func exitStatus(res *execute.Result) int {
	switch {
	case res.Status == execute.StatusSuccess:
		return ExitOK
	case res.Status == execute.StatusSetupError:
		return ExitSandbox
	case res.Status == execute.StatusTimeout:
		return ExitTimeout
	case res.Verdict == sandbox.StatusMemoryLimit:
		return ExitMemory
	case res.ExitCode > 0 && res.ExitCode < 256:
		return res.ExitCode
	}
	return ExitFailure
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
