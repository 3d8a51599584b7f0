package assembly

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
	"github.com/coderunner/coderunner/interp"
	"github.com/coderunner/coderunner/invoke"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/session"
)

// The parts Open builds, as Error.Part names them.
const (
	PartLanguages = "languages"
	PartBackend   = "backend"
	PartInvoker   = "invoker"
	PartSessions  = "sessions"
)

// Error is a part Open could not build. Its message is the part's name
// and the cause; callers that show the cause alone take Err.
type Error struct {
	// Part is one of PartLanguages, PartBackend, PartInvoker and
	// PartSessions.
	Part string
	// Err is the cause.
	Err error
}

func (e *Error) Error() string { return e.Part + ": " + e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// Options say which parts Open builds and what the callers differ in;
// everything else comes from the configuration.
type Options struct {
	// Config is the loaded configuration; nil means the defaults.
	Config *config.Config
	// Logger receives the parts' logs; nil discards them.
	Logger *slog.Logger
	// Registry holds the backends; nil means backend.Default.
	Registry *backend.Registry
	// Backend names the backend to open: "auto", "native", "bwrap" or
	// "docker"; empty means the configuration's backend.name.
	Backend string
	// Sandbox, when set, is the backend to use instead of opening one by
	// name. Close does not close it.
	Sandbox sandbox.Backend
	// Warm asks the backend to keep this many sandboxes started ahead of
	// need, for long-lived callers.
	Warm int
	// KeepGoing builds the parts even when no backend opens: every run
	// then fails with the reason, which Parts.BackendErr holds. An MCP
	// host shows a server that fails to start as a bare error, while a
	// tool result tells the agent why.
	KeepGoing bool
	// Languages, when set, is the language table the caller already
	// built from Config; nil means Open builds it.
	Languages *lang.Table

	// Executor builds the single-run executor (execute).
	Executor bool
	// Invoker builds the /execute invoker (invoke) and checks its work
	// directory.
	Invoker bool
	// Sessions opens the session store of the configuration's sessions
	// section, unless sessions.max_count is 0.
	Sessions bool
	// SessionDir holds the session store; empty means
	// coderunner-sessions-<uid> under backend.work_dir, or the session
	// package's default without one.
	SessionDir string
	// Engine builds the judge's engine (runner). That it cannot be built
	// is not an error of Open: Parts.EngineErr says why.
	Engine bool
	// CacheDir holds the judge's compile cache; empty means the runner's
	// default.
	CacheDir string
	// TmpSeeds builds, in the background once the parts are open, the
	// caches the languages' runs then find ready in /tmp (matplotlib's
	// font list; see runner.Builder.PrepareSeeds), for long-lived
	// callers: a one-shot command would spend more on it than it saves.
	TmpSeeds bool
}

// Parts are what Open built. The fields of the parts not asked for are
// nil. Parts are safe for concurrent use; Close ends them.
type Parts struct {
	// Config is the configuration the parts were built from.
	Config *config.Config
	// Logger is the logger the parts log to; never nil.
	Logger *slog.Logger
	// Languages is the language table.
	Languages *lang.Table
	// Backend is the sandbox backend programs run in.
	Backend sandbox.Backend
	// BackendErr, with Options.KeepGoing, is why no backend opened:
	// Backend then fails every run with it.
	BackendErr error
	// Executor runs single programs (execute_code, run, /v1/run).
	Executor *execute.Executor
	// Invoker runs the /execute service's executions.
	Invoker *invoke.Invoker
	// Sessions is the session store, or nil when sessions are off.
	Sessions *session.Store
	// Engine is the judge's engine, or nil when it was not asked for or
	// could not be built (EngineErr).
	Engine *runner.Runner
	// EngineErr is why the engine could not be built.
	EngineErr error

	ownsBackend bool
	closeOnce   sync.Once
	closeErr    error
	// stopSeeds ends the building of Options.TmpSeeds, seedsDone says
	// it is over.
	stopSeeds context.CancelFunc
	seedsDone chan struct{}
}

// Open builds the parts opts asks for from the configuration, in this
// order: the language table, the backend, the invoker, the executor, the
// session store and the engine. A part that fails is an *Error, and what
// was built before it is closed.
func Open(ctx context.Context, opts Options) (_ *Parts, retErr error) {
	cfg := opts.Config
	if cfg == nil {
		cfg = config.Default()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Parts{Config: cfg, Logger: log, Languages: opts.Languages, Backend: opts.Sandbox}
	if p.Languages == nil {
		langs, err := cfg.LanguageTable()
		if err != nil {
			return nil, &Error{Part: PartLanguages, Err: err}
		}
		p.Languages = langs
	}
	if p.Backend == nil {
		if err := p.openBackend(ctx, opts); err != nil {
			return nil, err
		}
	}
	defer func() {
		if retErr != nil {
			_ = p.Close()
		}
	}()

	if opts.Invoker {
		p.Invoker = invoke.New(p.Backend, p.Languages, invoke.Options{
			Logger: log, WorkDir: cfg.Backend.WorkDir, Limits: InvokeLimits(cfg),
		})
		if err := p.Invoker.Check(); err != nil {
			return nil, &Error{Part: PartInvoker, Err: err}
		}
	}
	if opts.Executor {
		p.Executor = execute.New(p.Backend, p.Languages, execute.Options{
			Logger:        log,
			TempDir:       cfg.Backend.WorkDir,
			CompileLimits: CompileLimits(cfg),
			SandboxLimits: SandboxLimits(cfg),
			// Close removes them.
			KeepWorkspaceDirs: true,
		})
	}
	if opts.Sessions && cfg.Sessions.MaxCount > 0 {
		dir := opts.SessionDir
		if dir == "" && cfg.Backend.WorkDir != "" {
			dir = filepath.Join(cfg.Backend.WorkDir, fmt.Sprintf("coderunner-sessions-%d", os.Geteuid()))
		}
		s, err := session.Open(sessionOptions(cfg, dir, log))
		if err != nil {
			return nil, &Error{Part: PartSessions, Err: err}
		}
		p.Sessions = s
		if p.Executor != nil {
			s.SetInterpreter(interp.New(p.Executor, interp.Options{Backend: p.Backend.Name(), Logger: log}))
		}
	}
	if opts.Engine {
		p.Engine, p.EngineErr = runner.New(p.Backend, p.Languages, runner.Options{
			CacheDir:       opts.CacheDir,
			CompileLimits:  CompileLimits(cfg),
			Logger:         log,
			SandboxPerTest: cfg.Backend.SandboxPerTest,
		})
	}
	if opts.TmpSeeds && p.BackendErr == nil {
		p.prepareSeeds()
	}
	return p, nil
}

// prepareSeeds builds the languages' /tmp seeds in the background: the
// builders of the parts share them, since they share the backend.
func (p *Parts) prepareSeeds() {
	ctx, stop := context.WithCancel(context.Background())
	p.stopSeeds, p.seedsDone = stop, make(chan struct{})
	b := runner.NewBuilder(p.Backend, p.Languages, runner.BuilderOptions{Logger: p.Logger})
	go func() {
		defer close(p.seedsDone)
		if err := b.PrepareSeeds(ctx); err != nil && ctx.Err() == nil {
			p.Logger.Info("a language's runs build their /tmp cache themselves", "error", err)
		}
	}()
}

// SeedsReady is closed once the building of Options.TmpSeeds is over (at
// once without it).
func (p *Parts) SeedsReady() <-chan struct{} {
	if p.seedsDone == nil {
		done := make(chan struct{})
		close(done)
		return done
	}
	return p.seedsDone
}

// openBackend opens the backend opts names, or with KeepGoing stands in
// one that fails every run when none opens.
func (p *Parts) openBackend(ctx context.Context, opts Options) error {
	reg := opts.Registry
	if reg == nil {
		reg = backend.Default
	}
	name := opts.Backend
	if name == "" {
		name = p.Config.Backend.Name
	}
	bo := BackendOptions(p.Config, p.Logger)
	bo.Warm = opts.Warm
	b, err := reg.Open(ctx, name, bo)
	switch {
	case err == nil:
		p.Backend, p.ownsBackend = b, true
	case opts.KeepGoing:
		p.Backend, p.BackendErr = unavailable{err: err}, err
	default:
		return &Error{Part: PartBackend, Err: err}
	}
	return nil
}

// Close ends every session and removes its files, then closes the backend
// when Open opened it. It is safe to call more than once.
func (p *Parts) Close() error {
	p.closeOnce.Do(func() {
		if p.stopSeeds != nil {
			p.stopSeeds()
			<-p.seedsDone
		}
		var errs []error
		if p.Sessions != nil {
			errs = append(errs, p.Sessions.Close())
		}
		if p.Executor != nil {
			errs = append(errs, p.Executor.Close())
		}
		if cl, ok := p.Backend.(io.Closer); ok && p.ownsBackend {
			errs = append(errs, cl.Close())
		}
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// Runner is the executor with sessions: a request with a SessionID runs
// in its session's workspace, and is refused (session.ErrDisabled) when
// sessions are off.
func (p *Parts) Runner() session.Executor { return p.Sessions.Wrap(p.Executor) }

// JudgeEngine is Engine as a judge.Engine: nil, not a nil *runner.Runner,
// when there is none, for options that read nil as "no engine".
func (p *Parts) JudgeEngine() judge.Engine {
	if p.Engine == nil {
		return nil
	}
	return p.Engine
}

// DefaultLimits are the limits of a run that names none; see
// DefaultLimits.
func (p *Parts) DefaultLimits() execute.ExecutionLimits { return DefaultLimits(p.Config) }

// JudgeOptions are the options the judge runs with; see JudgeOptions.
func (p *Parts) JudgeOptions() judge.Options { return JudgeOptions(p.Config, p.Logger) }

// Judge returns a judge on the engine with opts (JudgeOptions, with the
// caller's Parallel and Progress). Without an engine it judges every
// request a sandbox_error that says why.
func (p *Parts) Judge(opts judge.Options) *judge.Judge {
	var engine judge.Engine = p.Engine
	if p.Engine == nil {
		err := p.EngineErr
		if err == nil {
			err = errors.New("no judge engine was built")
		}
		engine = BrokenEngine{Err: err}
	}
	return judge.New(engine, opts)
}

// DiskSessions opens the session store on disk that keeps sessions across
// processes, for callers that live for one call (coderunner run
// --session), with the caps of the configuration's sessions section. dir
// says where it lies; it is asked only when sessions are on.
func (p *Parts) DiskSessions(dir func() (string, error)) (*session.PersistentStore, error) {
	if p.Config.Sessions.MaxCount <= 0 {
		return nil, fmt.Errorf("%w (sessions.max_count is 0)", session.ErrDisabled)
	}
	d, err := dir()
	if err != nil {
		return nil, err
	}
	return session.OpenPersistent(sessionOptions(p.Config, d, p.Logger))
}

// sessionOptions are a session store's options in dir: the configuration's
// caps, each workspace capped at the size of a sandbox's workspace.
func sessionOptions(cfg *config.Config, dir string, log *slog.Logger) session.Options {
	sc := cfg.Sessions
	return session.Options{
		Dir:            dir,
		IdleTimeout:    sc.IdleTimeout.Std(),
		MaxIdleTimeout: sc.MaxIdleTimeout.Std(),
		MaxSessions:    sc.MaxCount,
		MaxBytes:       int64(cfg.Backend.WorkspaceSizeMB) * sandbox.MiB,
		MaxTotalBytes:  int64(sc.MaxDiskMB) * sandbox.MiB,
		MaxFileBytes:   int64(sc.MaxFileMB) * sandbox.MiB,
		Logger:         log,
	}
}

// BrokenEngine stands in for a judge engine that could not be built, so
// that judging reports why as a sandbox_error.
type BrokenEngine struct{ Err error }

var _ judge.Engine = BrokenEngine{}

// Prepare fails with the reason there is no engine.
func (b BrokenEngine) Prepare(context.Context, string, string, judge.ProgramOptions) (judge.Program, error) {
	return nil, fmt.Errorf("the judge is unavailable: %w", b.Err)
}

// unavailable fails every run with the reason no backend could be opened.
type unavailable struct{ err error }

func (unavailable) Name() string { return "none" }

func (u unavailable) Run(context.Context, *sandbox.Spec) (*sandbox.Result, error) {
	return nil, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, u.err)
}
