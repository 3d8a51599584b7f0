package coderunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/session"

	// The native backend is built in, so that "auto" finds it; docker.go's
	// import registers the docker backend too. Besides cmd/coderunner, this
	// package is the only one that registers backends.
	_ "github.com/coderunner/coderunner/sandbox/native"
)

// Options configure a CodeRunner. The zero value asks for the defaults.
type Options struct {
	// Backend names the sandbox backend: "auto" (the default: the
	// strongest that works here), "native", "bwrap" or "docker".
	Backend string
	// Sandbox, when set, is the backend to use instead of opening one by
	// name. The CodeRunner does not close it.
	Sandbox sandbox.Backend
	// ConfigFile is a YAML configuration file; empty means none.
	ConfigFile string
	// LookupEnv reads CODERUNNER_* variables over the file; nil means
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
	// Warm asks the backend to keep this many sandboxes started ahead of
	// need, for long-lived programs.
	Warm int
	// SessionDir holds session workspaces; empty means
	// coderunner-sessions-<uid> under the configuration's backend.work_dir
	// or the system temporary directory.
	SessionDir string
	// CacheDir holds the judge's compile cache; empty means the runner's
	// default.
	CacheDir string
	// NoSessionTmpfs is ignored: a session's workspace is always a
	// size-capped tmpfs, which every backend requires of a host
	// workspace (the native backend starts a new sandbox for a workspace
	// mounted after its warm ones started).
	//
	// Deprecated: walking a workspace between calls did not cap it while
	// a program ran.
	NoSessionTmpfs bool
}

// CodeRunner runs code in one sandbox backend: spec 004 executions with
// sessions, and spec 000 judging. It is safe for concurrent use.
type CodeRunner struct {
	backend   sandbox.Backend
	ownsBack  bool
	cfg       *config.Config
	langs     *lang.Table
	log       *slog.Logger
	exec      *execute.Executor
	sessions  *session.Store
	engine    *runner.Runner
	engineErr error
	judge     *judge.Judge

	probeOnce sync.Once
	probe     sandbox.Report

	closeOnce sync.Once
	closeErr  error
}

// New opens the backend, the language table and the session store that
// the configuration asks for. It fails with ErrBackendUnavailable when no
// backend works here, and for a bad configuration.
func New(ctx context.Context, opts Options) (c *CodeRunner, retErr error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg, err := config.Load(opts.ConfigFile, opts.LookupEnv)
	if err != nil {
		return nil, err
	}
	langs, err := cfg.LanguageTable()
	if err != nil {
		return nil, fmt.Errorf("languages: %w", err)
	}
	c = &CodeRunner{backend: opts.Sandbox, cfg: cfg, langs: langs, log: log}
	if c.backend == nil {
		name := opts.Backend
		if name == "" {
			name = cfg.Backend.Name
		}
		b, err := backend.Open(ctx, name, backend.Options{Logger: log, Config: cfg, TempDir: cfg.Backend.WorkDir, Warm: opts.Warm})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBackendUnavailable, err)
		}
		c.backend, c.ownsBack = b, true
	}
	defer func() {
		if retErr != nil {
			_ = c.Close()
		}
	}()

	c.exec = execute.New(c.backend, langs, execute.Options{
		Logger:        log,
		TempDir:       cfg.Backend.WorkDir,
		CompileLimits: cfg.Limits.Compile.Sandbox(),
		SandboxLimits: sandbox.Limits{
			OpenFiles:     cfg.Backend.OpenFiles,
			WorkspaceSize: int64(cfg.Backend.WorkspaceSizeMB) * sandbox.MiB,
			TmpSize:       int64(cfg.Backend.TmpSizeMB) * sandbox.MiB,
		},
	})
	if cfg.Sessions.MaxCount > 0 {
		dir := opts.SessionDir
		if dir == "" && cfg.Backend.WorkDir != "" {
			dir = filepath.Join(cfg.Backend.WorkDir, fmt.Sprintf("coderunner-sessions-%d", os.Geteuid()))
		}
		c.sessions, err = session.Open(session.Options{
			Dir:           dir,
			IdleTimeout:   cfg.Sessions.IdleTimeout.Std(),
			MaxSessions:   cfg.Sessions.MaxCount,
			MaxBytes:      int64(cfg.Backend.WorkspaceSizeMB) * sandbox.MiB,
			MaxTotalBytes: int64(cfg.Sessions.MaxDiskMB) * sandbox.MiB,
			Logger:        log,
		})
		if err != nil {
			return nil, fmt.Errorf("sessions: %w", err)
		}
	}
	c.engine, c.engineErr = runner.New(c.backend, langs, runner.Options{
		CacheDir:       opts.CacheDir,
		CompileLimits:  cfg.Limits.Compile.Sandbox(),
		Logger:         log,
		SandboxPerTest: cfg.Backend.SandboxPerTest,
	})
	var engine judge.Engine = c.engine
	if c.engineErr != nil {
		// Running code works without a compile cache; judging reports
		// the cause as a sandbox_error.
		log.Warn("the judge is unavailable", "error", c.engineErr)
		engine = brokenEngine{c.engineErr}
	}
	c.judge = judge.New(engine, c.JudgeOptions())
	return c, nil
}

// Close ends every session and removes its files, and closes the backend
// when New opened it. It is safe to call more than once.
func (c *CodeRunner) Close() error {
	c.closeOnce.Do(func() {
		var errs []error
		if c.sessions != nil {
			errs = append(errs, c.sessions.Close())
		}
		if cl, ok := c.backend.(io.Closer); ok && c.ownsBack {
			errs = append(errs, cl.Close())
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// Backend returns the sandbox backend programs run in.
func (c *CodeRunner) Backend() sandbox.Backend { return c.backend }

// Languages returns the language table.
func (c *CodeRunner) Languages() *lang.Table { return c.langs }

// Sessions returns the session store, or nil when sessions are turned off
// (sessions.max_count: 0).
func (c *CodeRunner) Sessions() *session.Store { return c.sessions }

// Executor returns the spec 004 executor with sessions: a request with a
// SessionID runs in its session's workspace.
func (c *CodeRunner) Executor() session.Executor { return c.sessions.Wrap(c.exec) }

// Engine returns the judge's engine, or an error saying why there is none
// (its compile cache could not be made).
func (c *CodeRunner) Engine() (judge.Engine, error) {
	if c.engineErr != nil {
		return nil, c.engineErr
	}
	return c.engine, nil
}

// JudgeOptions are the options the judge runs with, from the
// configuration.
func (c *CodeRunner) JudgeOptions() judge.Options {
	l := c.cfg.Limits
	return judge.Options{
		MaxOutputKB:        l.MaxOutputSizeKB,
		MaxOutputCeilingKB: l.MaxOutputCeilingKB,
		KeptOutputKB:       l.KeptOutputKB,
		KeptOutputTotalKB:  l.KeptOutputTotalKB,
		Logger:             c.log,
	}
}

// DefaultLimits returns the limits a call that names none runs with: spec
// 004's defaults, or the configuration's limits.run section.
func (c *CodeRunner) DefaultLimits() ExecutionLimits {
	d := c.cfg.Limits.Run
	return ExecutionLimits{
		TimeLimit:      d.Timeout.Std().Seconds(),
		MemoryLimit:    d.MemoryMB,
		CPULimit:       d.CPUCores,
		MaxOutputChars: d.MaxOutputChars,
		Pids:           d.MaxProcesses,
	}.WithDefaults()
}

// DeleteSession ends a session and removes its workspace; a call running
// in it finishes first. It fails with ErrSessionNotFound for an unknown
// session.
func (c *CodeRunner) DeleteSession(id string) error {
	if c.sessions == nil {
		return session.ErrDisabled
	}
	return c.sessions.Delete(id)
}

var (
	defaultOnce sync.Once
	defaultCR   *CodeRunner
	defaultErr  error
)

// Default returns the CodeRunner the package-level functions use, made on
// first use with the zero Options. It is never closed: its sessions end
// with the process and are cleaned up by the next one.
func Default() (*CodeRunner, error) {
	defaultOnce.Do(func() {
		defaultCR, defaultErr = New(context.Background(), Options{})
	})
	return defaultCR, defaultErr
}
