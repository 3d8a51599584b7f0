package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"

	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

// ErrClosed is returned by Program.Run after Close.
var ErrClosed = errors.New("program is closed")

// Program is a prepared program: the source of an interpreted language,
// a compiled program held in the cache (which does not evict it until
// Close), or one a Build compiled into the caller's workspace. It is safe
// for concurrent use.
type Program struct {
	b        *Builder
	lang     *lang.Language
	language string // as the caller named it
	// place is the program's files in the workspace, its entry and class.
	place *lang.Placement
	// withFiles tells that the request carried files beyond its code:
	// they are written into every run's workspace, a cached program's too.
	withFiles bool
	// args and env are the request's program arguments and environment
	// (KEY=value, sorted), the same for every run.
	args  []string
	env   []string
	entry *entry // compiled languages, cached only
	// workspace is the host workspace of a Build's program, where it runs;
	// inWorkspace tells that it was compiled there.
	workspace   string
	inWorkspace bool
	// series runs the program when the backend can keep a sandbox from
	// one run to the next; nil runs each in a new sandbox.
	series sandbox.Series

	mu     sync.RWMutex
	closed bool
}

var _ judge.StreamingProgram = (*Program)(nil)

// Language returns the id of the program's language.
func (p *Program) Language() string { return p.lang.ID }

// Compiled reports whether the program was compiled.
func (p *Program) Compiled() bool { return p.entry != nil || p.inWorkspace }

// Source returns the sandbox path of the program's entry file.
func (p *Program) Source() string {
	if p.entry != nil {
		return path.Join(ProgramDir, p.place.Entry)
	}
	return path.Join(sandbox.WorkspaceDir, p.place.Entry)
}

// Run runs the program once with stdin as its standard input and limits
// as its limits; see judge.Program. A cached program is mounted read-only
// at ProgramDir; /workspace is the Build's workspace, or else a private
// directory, empty but for the source of an interpreted language. The
// process limit is raised to what the language's runtime needs (a JVM's
// threads), and a JVM gets a heap below the memory limit.
//
// On a backend that can keep a sandbox from one run to the next
// (sandbox.Reuser), the runs of one Program share sandboxes, each run
// starting clean (see sandbox.Series): its tests are the same code, and
// creating a sandbox costs more than running a small test.
func (p *Program) Run(ctx context.Context, stdin []byte, limits sandbox.Limits) (*sandbox.Result, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, ErrClosed
	}
	if p.series != nil {
		return p.series.Run(ctx, p.spec(stdin, limits))
	}
	return p.b.backend.Run(ctx, p.spec(stdin, limits))
}

// RunStreaming is Run with the program's output handed to out's writers as
// it is produced and the Result keeping at most out.Keep bytes of each
// stream (sandbox.Spec.KeepOutput); see judge.StreamingProgram. The judge
// judges outputs this way without holding them.
func (p *Program) RunStreaming(ctx context.Context, stdin []byte, limits sandbox.Limits, out judge.RunOutput) (*sandbox.Result, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, ErrClosed
	}
	spec := p.spec(stdin, limits)
	spec.Stdout, spec.Stderr, spec.KeepOutput = out.Stdout, out.Stderr, out.Keep
	if p.series != nil {
		return p.series.Run(ctx, spec)
	}
	return p.b.backend.Run(ctx, spec)
}

// openSeries gives the program a series of runs if the backend has them.
func (p *Program) openSeries() {
	if reuser, ok := p.b.backend.(sandbox.Reuser); ok && !p.b.perTest {
		p.series = reuser.Series()
	}
}

// Spec returns the sandbox spec Run would run. Callers that need more
// than Run offers (streaming output, sampling) run it themselves while
// the Program is open.
func (p *Program) Spec(stdin []byte, limits sandbox.Limits) *sandbox.Spec {
	return p.spec(stdin, limits)
}

func (p *Program) spec(stdin []byte, limits sandbox.Limits) *sandbox.Spec {
	l := p.lang
	memMB := int(limits.WithDefaults().Memory / sandbox.MiB)
	runLimits := l.RunLimits(limits)
	spec := &sandbox.Spec{
		// The request's env after the thread counts: a request that sets
		// one knows its program's threads better than its limits do.
		Env:    lang.Environment(l.Env, l.ThreadEnvironment(runLimits), p.env),
		Dir:    sandbox.WorkspaceDir,
		Mounts: slices.Clone(l.Mounts),
		Limits: runLimits,
		// A cache the runtime would build in each run (see PrepareSeeds).
		TmpFiles: p.b.tmpFiles(l),
	}
	vars := p.place.Vars(sandbox.WorkspaceDir)
	vars.MemoryMB = memMB
	switch {
	case p.entry != nil:
		// The compile step's workspace is the run's ProgramDir; the
		// request's files are in the run's own workspace too, as they are
		// for a program compiled there.
		vars = p.place.Vars(ProgramDir)
		vars.MemoryMB = memMB
		vars.Workspace = ProgramDir
		vars.Binary = path.Join(ProgramDir, lang.DefaultBinary)
		spec.Mounts = append(spec.Mounts, sandbox.Mount{Source: p.entry.dir, Target: ProgramDir})
		if p.withFiles {
			spec.Files = slices.Clone(p.place.Files)
		}
	case p.inWorkspace:
		// The compile step left the program in the run's workspace.
		spec.Workspace = p.workspace
	default:
		spec.Workspace = p.workspace
		spec.Files = slices.Clone(p.place.Files)
	}
	spec.Args = l.RunArgs(vars, p.args...)
	if len(stdin) > 0 {
		spec.Stdin = bytes.NewReader(stdin)
	}
	return spec
}

// Close releases the program's cache entry, which may then be evicted. It
// waits for runs under way and is safe to call more than once.
func (p *Program) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if p.series != nil {
		if err := p.series.Close(); err != nil {
			return fmt.Errorf("unable to release the program's sandboxes: %w", err)
		}
	}
	if p.entry != nil {
		if err := p.entry.release(); err != nil {
			return fmt.Errorf("unable to release the cache entry: %w", err)
		}
	}
	return nil
}

var _ judge.Invoker = (*Program)(nil)

// collectScript runs "$@", then writes the start of the file $1 to
// stderr and ends as "$@" did: with its exit status, or killed by the
// same signal (where the shell is not its namespace's init, which the
// signal would not reach; there the status 128+N stays).
var collectScript = fmt.Sprintf(`f=$1; shift; "$@"; s=$?; head -c %d -- "$f" >&2 2>/dev/null; `+
	`if [ $s -gt 128 ] && [ $s -lt 160 ]; then trap - $((s-128)); kill -$((s-128)) $$; fi; exit $s`, judge.MaxCheckerMessageBytes)

// Invoke runs the program once as inv says: its arguments after the
// program's own, its files in the run's workspace (beside an interpreted
// program's source), its streams; see judge.Invoker. The judge runs
// checkers, interactors and interactive solutions this way.
func (p *Program) Invoke(ctx context.Context, inv judge.Invocation) (*sandbox.Result, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, ErrClosed
	}
	spec := p.spec(nil, inv.Limits)
	spec.Args = append(spec.Args, inv.Args...)
	for _, f := range inv.Files {
		if slices.ContainsFunc(spec.Files, func(g sandbox.File) bool { return g.Path == f.Path }) {
			return nil, fmt.Errorf("%w: file %s would replace the program's own", sandbox.ErrInvalidSpec, f.Path)
		}
		spec.Files = append(spec.Files, f)
	}
	if inv.Collect != "" {
		// A shell runs the program, then copies the start of the file
		// to stderr and exits as the program did: the workspace is gone
		// once the run is over.
		spec.Args = append([]string{"/bin/sh", "-c", collectScript, "sh", inv.Collect}, spec.Args...)
	}
	spec.Stdin = inv.Stdin
	spec.Stdout, spec.Stderr, spec.KeepOutput = inv.Stdout, inv.Stderr, inv.Keep
	if p.series != nil {
		return p.series.Run(ctx, spec)
	}
	return p.b.backend.Run(ctx, spec)
}
