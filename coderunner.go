package coderunner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/coderunner/coderunner/internal/assembly"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/judge"
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

// CodeRunner runs code in one sandbox backend: single runs with limits and
// sessions, and judging against test cases. It is safe for concurrent use.
type CodeRunner struct {
	parts *assembly.Parts
	judge *judge.Judge

	probeOnce sync.Once
	probe     sandbox.Report
}

// New opens the backend, the language table and the session store that
// the configuration asks for. It fails with ErrBackendUnavailable when no
// backend works here, and for a bad configuration.
func New(ctx context.Context, opts Options) (*CodeRunner, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg, err := config.Load(opts.ConfigFile, opts.LookupEnv)
	if err != nil {
		return nil, err
	}
	parts, err := assembly.Open(ctx, assembly.Options{
		Config:     cfg,
		Logger:     log,
		Backend:    opts.Backend,
		Sandbox:    opts.Sandbox,
		Warm:       opts.Warm,
		Executor:   true,
		Sessions:   true,
		SessionDir: opts.SessionDir,
		Engine:     true,
		CacheDir:   opts.CacheDir,
	})
	var pe *assembly.Error
	switch {
	case errors.As(err, &pe) && pe.Part == assembly.PartBackend:
		return nil, fmt.Errorf("%w: %w", ErrBackendUnavailable, pe.Err)
	case err != nil:
		return nil, err
	}
	if parts.EngineErr != nil {
		// Running code works without a compile cache; judging reports
		// the cause as a sandbox_error.
		log.Warn("the judge is unavailable", "error", parts.EngineErr)
	}
	return &CodeRunner{parts: parts, judge: parts.Judge(parts.JudgeOptions())}, nil
}

// Close ends every session and removes its files, and closes the backend
// when New opened it. It is safe to call more than once.
func (c *CodeRunner) Close() error { return c.parts.Close() }

// DeleteSession ends a session and removes its workspace; a call running
// in it finishes first. It fails with ErrSessionNotFound for an unknown
// session.
func (c *CodeRunner) DeleteSession(id string) error {
	if c.parts.Sessions == nil {
		return session.ErrDisabled
	}
	return c.parts.Sessions.Delete(id)
}

// SessionInfo describes a session: when it started, was last used and
// expires, its idle timeout and the disk its workspace used.
type SessionInfo = session.Info

// Session describes the session id. It fails with ErrSessionExpired for
// a session that ended idle recently, ErrSessionNotFound otherwise.
func (c *CodeRunner) Session(id string) (SessionInfo, error) {
	if c.parts.Sessions == nil {
		return SessionInfo{}, session.ErrDisabled
	}
	return c.parts.Sessions.Info(context.Background(), id)
}

// Sessions describes every live session, by id.
func (c *CodeRunner) Sessions() []SessionInfo {
	if c.parts.Sessions == nil {
		return []SessionInfo{}
	}
	return c.parts.Sessions.List(context.Background())
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
