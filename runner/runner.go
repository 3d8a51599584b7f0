package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

// DefaultCacheMaxBytes bounds the compile cache on disk when
// Options.CacheMaxBytes is zero.
const DefaultCacheMaxBytes = 1 * sandbox.GiB

// DefaultCompileLimits bound every compile step, the judge's and a single
// run's alike: 30 s and 512 MB. Compilers get more
// processes, open files and /tmp than the programs they build: gcc forks
// cc1, as and ld, javac and go build run many threads and write large
// temporary files. The two compile paths had drifted to 128 and 256
// processes: 256 it is, since with 128 the Go build cache seed (go build
// of the standard library, its compilers' threads) fails or crawls and
// the judge's Go compiles time out; FileSize is 256 MB for both. CPUs is
// set by CompileLimits to min(2, cores) when it is zero.
var DefaultCompileLimits = sandbox.Limits{
	WallTime:    30 * time.Second,
	CPUTime:     30 * time.Second,
	Memory:      512 * sandbox.MiB,
	Processes:   256,
	OutputBytes: sandbox.MiB,
	FileSize:    256 * sandbox.MiB,
	OpenFiles:   1024,
	TmpSize:     256 * sandbox.MiB,
}

// CompileLimits returns the limits of a compile step: DefaultCompileLimits
// with the non-zero fields of o put over it, CPUs min(2, cores) when
// neither sets it, and sandbox.DefaultLimits for the rest.
func CompileLimits(o sandbox.Limits) sandbox.Limits {
	cl := DefaultCompileLimits.Overlay(o)
	if cl.CPUs == 0 {
		cl.CPUs = float64(min(2, runtime.NumCPU()))
	}
	return cl.WithDefaults()
}

// ProgramDir is where the compiled program (the compile step's workspace
// files) is mounted, read-only, when it runs. The run's own /workspace is
// a fresh private directory.
const ProgramDir = "/opt/program"

// Options configure a Runner. Zero fields take their defaults.
type Options struct {
	// CacheDir holds the compile cache. Empty means /var/cache/coderunner
	// when running as root, else coderunner under os.UserCacheDir. The
	// sandbox must be able to reach it: every directory above it must be
	// searchable by others when the sandbox runs as another user.
	CacheDir string
	// CacheMaxBytes bounds the compiled programs kept on disk; the least
	// recently used are removed first. Zero means DefaultCacheMaxBytes.
	CacheMaxBytes int64
	// CompileLimits bound every compile step. Zero fields take
	// DefaultCompileLimits (see CompileLimits).
	CompileLimits sandbox.Limits
	// Logger receives warnings (a cache entry that could not be removed,
	// a Go build cache seed that failed); nil discards them.
	Logger *slog.Logger
	// SandboxPerTest runs every Program.Run in a new sandbox, even on a
	// backend that can keep one between the runs of a program
	// (sandbox.Reuser).
	SandboxPerTest bool
}

// Runner prepares and runs programs of every language of a table in a
// sandbox backend. It implements judge.Engine and is safe for concurrent
// use by several goroutines and, through its cache directory, several
// processes.
type Runner struct {
	*Builder
	cache   *cache
	flights flightGroup
	seeds   seedGroup
}

var _ judge.Engine = (*Runner)(nil)

// New returns a Runner that runs programs in backend with the recipes of
// langs. It creates the cache directory and removes what crashed runs
// left in it.
func New(backend sandbox.Backend, langs *lang.Table, opts Options) (*Runner, error) {
	if backend == nil {
		return nil, errors.New("runner: no sandbox backend")
	}
	if langs == nil {
		return nil, errors.New("runner: no language table")
	}
	r := &Runner{Builder: NewBuilder(backend, langs, BuilderOptions{CompileLimits: opts.CompileLimits, Logger: opts.Logger, SandboxPerTest: opts.SandboxPerTest})}
	if err := r.compileLimits.Validate(); err != nil {
		return nil, fmt.Errorf("runner: compile limits: %w", err)
	}
	dir := opts.CacheDir
	if dir == "" {
		var err error
		if dir, err = defaultCacheDir(); err != nil {
			return nil, err
		}
	}
	maxBytes := opts.CacheMaxBytes
	if maxBytes == 0 {
		maxBytes = DefaultCacheMaxBytes
	}
	if maxBytes < 0 {
		return nil, fmt.Errorf("runner: CacheMaxBytes %d is negative", maxBytes)
	}
	c, err := openCache(dir, maxBytes, r.log)
	if err != nil {
		return nil, err
	}
	r.cache = c
	return r, nil
}

// defaultCacheDir is the cache directory when Options.CacheDir is empty.
// Root's home is not searchable by the sandbox's users, hence /var/cache.
func defaultCacheDir() (string, error) {
	if os.Geteuid() == 0 {
		return "/var/cache/coderunner", nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("runner: no cache directory: %w", err)
	}
	return filepath.Join(base, "coderunner"), nil
}

// CacheDir returns the directory of the compile cache.
func (r *Runner) CacheDir() string { return r.cache.dir }

// Prepare makes code ready to run; see judge.Engine. An unknown language
// is an error wrapping judge.ErrUnsupportedLanguage (and
// lang.ErrUnknownLanguage) that lists the known ids; a language whose
// toolchain is missing here is an error wrapping sandbox.ErrUnavailable
// that says why. A compiled language is compiled in the sandbox with the
// compile limits, or taken from the cache when the same source was
// compiled before with the same toolchain, argv (the compiler flags of
// opts included), environment and files; a compilation failure is a
// *judge.CompileError. Options that break the language's rules are a
// *judge.ValidationError naming the field (see CheckOptions), and files
// that do not fit the language a *multifile.Error.
func (r *Runner) Prepare(ctx context.Context, language, code string, opts judge.ProgramOptions) (judge.Program, error) {
	p, err := r.prepare(ctx, language, code, opts)
	if err != nil {
		// A nil *Program in a non-nil interface would look like a program.
		return nil, err
	}
	return p, nil
}

// PrepareProgram is Prepare returning the concrete type.
func (r *Runner) PrepareProgram(ctx context.Context, language, code string, opts judge.ProgramOptions) (*Program, error) {
	return r.prepare(ctx, language, code, opts)
}

func (r *Runner) prepare(ctx context.Context, language, code string, opts judge.ProgramOptions) (*Program, error) {
	l, err := r.langs.Lookup(language)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", judge.ErrUnsupportedLanguage, err)
	}
	if err := CheckOptions(l, opts); err != nil {
		return nil, &judge.ValidationError{Message: "Invalid " + err.Error()}
	}
	tc := l.Discover(ctx)
	if err := r.Check(ctx, l); err != nil {
		return nil, err
	}
	p, err := r.newProgram(l, language, code, opts)
	if err != nil {
		return nil, err
	}
	if !l.Compiled {
		p.openSeries()
		return p, nil
	}
	e, err := r.compiled(ctx, l, tc.Version, p.place, opts.CompilerFlags, p.withFiles)
	if err != nil {
		return nil, err
	}
	p.entry = e
	p.openSeries()
	return p, nil
}
