package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

// maxCompileOutput bounds the compiler output kept in a CompileError.
const maxCompileOutput = 64 << 10

// maxCompileAttempts bounds how often Prepare compiles again when the
// program it waited for left the cache before it could take it (a cache
// much smaller than the programs).
const maxCompileAttempts = 3

// compileStep is one compilation, fully determined.
type compileStep struct {
	lang    *lang.Language
	version string
	// where is the compile environment (KeyInput.Environment).
	where string
	// args is the compile argv, the request's compiler flags included.
	args   []string
	env    []string
	source string // the entry's path in the workspace
	files  []sandbox.File
	// multi keys the step by every file, not by the entry alone.
	multi bool
}

// buildCacheEnv points the compiler's build cache, if the language names
// one, at a private directory of the compile workspace, seeded before the
// step (see goseed.go): a cached compile does not start cold.
func buildCacheEnv(l *lang.Language) []string {
	if l.BuildCacheEnv == "" {
		return nil
	}
	return []string{l.BuildCacheEnv + "=" + path.Join(sandbox.WorkspaceDir, goCacheDir)}
}

// imager is a backend that runs each language in an image of its own.
type imager interface {
	ImageFor(language string) string
}

// key is the cache key of the step.
func (s *compileStep) key() string {
	k := KeyInput{
		Language:    s.lang.ID,
		Toolchain:   s.version,
		Environment: s.where,
		Args:        s.args,
		Env:         s.env,
		Source:      s.source,
	}
	for _, f := range s.files {
		sum := sha256.Sum256(f.Content)
		if f.Path == s.source {
			k.SourceSHA256 = hex.EncodeToString(sum[:])
		}
		if s.multi {
			k.Files = append(k.Files, FileKey{Path: f.Path, Mode: uint32(f.Mode.Perm()), SHA256: hex.EncodeToString(sum[:])})
		}
	}
	return k.Key()
}

// compiled returns the cache entry of code, compiling it on a miss. Only
// one compilation of a key runs at a time in this process; the others wait
// for it and take its entry.
func (r *Runner) compiled(ctx context.Context, l *lang.Language, version string, place *lang.Placement, flags []string, multi bool) (*entry, error) {
	step := r.newStep(l, version, place, flags, true)
	step.multi = multi
	key := step.key()
	for attempt := 0; ; attempt++ {
		e, ok, err := r.cache.open(key)
		if err != nil || ok {
			return e, err
		}
		if attempt == maxCompileAttempts {
			return nil, fmt.Errorf("the compiled %s program left the cache before it could be used: the cache (%d bytes) is too small", l.ID, r.cache.maxBytes)
		}
		e, leader, err := r.flights.do(ctx, key, func() (*entry, error) {
			// A flight of the same key may have ended since our look.
			if e, ok, err := r.cache.open(key); err != nil || ok {
				return e, err
			}
			return r.compileAndStore(ctx, step, key)
		})
		if leader {
			return e, err
		}
		if err != nil {
			// The leader's cancellation is not ours: compile again.
			if (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) && ctx.Err() == nil {
				continue
			}
			return nil, err
		}
	}
}

// compileAndStore compiles step in a fresh workspace and stores what it
// produced in the cache as key.
func (r *Runner) compileAndStore(ctx context.Context, step *compileStep, key string) (*entry, error) {
	ws, err := r.workspace("compile-", r.compileLimits.WorkspaceSize)
	if err != nil {
		return nil, err
	}
	defer r.removeWorkspace(ws)

	var skip func(string) bool
	if step.lang.BuildCacheEnv != "" {
		if err := r.seedGoCache(ctx, step, ws); err != nil {
			return nil, err
		}
		skip = func(rel string) bool { return rel == goCacheDir }
	}
	res, err := r.backend.Run(ctx, r.compileSpec(step, ws, r.compileLimits))
	if err != nil {
		return nil, fmt.Errorf("compile step: %w", err)
	}
	if res.Status != sandbox.StatusOK {
		return nil, compileError(res, r.compileLimits)
	}

	staged, err := r.cache.mkTemp("entry-")
	if err != nil {
		return nil, err
	}
	if err := r.stage(step, ws, staged, skip); err != nil {
		if rmErr := removeTree(staged); rmErr != nil {
			r.log.Warn("unable to remove a staged cache entry", "path", staged, "error", rmErr)
		}
		return nil, err
	}
	return r.cache.insert(key, staged)
}

// stage copies the compile workspace ws into staged, a new cache entry.
func (r *Runner) stage(step *compileStep, ws, staged string, skip func(string) bool) error {
	if err := copyOut(ws, staged, skip, artifactLimits); err != nil {
		if errors.Is(err, errTooLarge) {
			return &judge.CompileError{Output: "Compilation produced a program too large to run: " + err.Error()}
		}
		return fmt.Errorf("unable to copy the compiled program: %w", err)
	}
	if usesBinary(step.lang) {
		fi, err := os.Lstat(filepath.Join(staged, lang.DefaultBinary)) //nolint:forbidigo // the staged entry, written by copyOut with no links
		if err != nil || !fi.Mode().IsRegular() {
			return &judge.CompileError{Output: "Compilation produced no program"}
		}
	}
	// The sandbox's users read the entry; it is complete, so it may be
	// renamed into place.
	return os.Chmod(staged, 0o755) //nolint:forbidigo // the staged entry, host-owned
}

// usesBinary reports whether the language's run template runs {binary}.
func usesBinary(l *lang.Language) bool {
	return slices.ContainsFunc(l.Run, func(a string) bool { return strings.Contains(a, "{binary}") })
}

// workspace makes a compile workspace in the cache's tmp directory: a
// tmpfs capped at size bytes, so that a compiler (or a program that makes
// it write without end) cannot fill the host's disk. Without root the
// workspace keeper mounts it in a user namespace of its own
// (capws.NewKept); where even that is not allowed the compile step is
// refused with an error that says so: its output must come back through
// a host directory.
func (r *Runner) workspace(prefix string, size int64) (string, error) {
	d, err := capws.NewKept(r.cache.tmp, prefix, size, 0)
	if errors.Is(err, capws.ErrUnsupported) {
		return "", fmt.Errorf("%w: the compile step writes the program into a host workspace, which must be size-capped: %w; run as root or allow user namespaces", sandbox.ErrUnavailable, err)
	}
	if err != nil {
		return "", err
	}
	return d.Path, nil
}

// removeWorkspace unmounts and removes a compile workspace: what the
// compile step left in it goes with its tmpfs, never walked or followed.
func (r *Runner) removeWorkspace(ws string) {
	if err := (&capws.Dir{Path: ws}).Remove(); err != nil {
		r.log.Warn("unable to remove a compile workspace", "path", ws, "error", err)
	}
}

// compileError is the verdict on a compile step that did not succeed: the
// reason and the compiler's diagnostics, bounded.
func compileError(res *sandbox.Result, limits sandbox.Limits) *judge.CompileError {
	var reason string
	switch res.Status {
	case sandbox.StatusTimeLimit:
		d := limits.WallTime
		if res.TimeLimit == "cpu" {
			d = limits.CPUTime
		}
		reason = fmt.Sprintf("Compilation timed out (%s limit of %v)", timeKind(res.TimeLimit), d)
	case sandbox.StatusMemoryLimit:
		reason = fmt.Sprintf("Compilation exceeded the memory limit of %d MB", limits.Memory/sandbox.MiB)
	case sandbox.StatusOutputLimit:
		reason = fmt.Sprintf("Compiler output exceeded %d bytes", limits.OutputBytes)
	case sandbox.StatusSignaled:
		reason = fmt.Sprintf("Compiler killed by signal %d (%v)", int(res.Signal), res.Signal)
	}
	if reason == "" && res.MemoryExceeded {
		// The kernel killed one of the compiler's processes (cc1) and the
		// driver reported it.
		reason = fmt.Sprintf("Compilation exceeded the memory limit of %d MB", limits.Memory/sandbox.MiB)
	}
	diag := combine(res.Stderr, res.Stdout)
	out := diag
	switch {
	case reason != "" && diag != "":
		out = reason + "\n" + diag
	case reason != "":
		out = reason
	case diag == "":
		out = fmt.Sprintf("Compilation failed (exit code %d)", res.ExitCode)
	}
	return &judge.CompileError{Output: bound(out), Stdout: bound(string(res.Stdout))}
}

func timeKind(which string) string {
	if which == "cpu" {
		return "CPU time"
	}
	return "time"
}

// combine joins the compiler's stderr and stdout, stderr first: that is
// where diagnostics go.
func combine(stderr, stdout []byte) string {
	e, o := strings.TrimRight(string(stderr), "\n"), strings.TrimRight(string(stdout), "\n")
	switch {
	case e == "":
		return o
	case o == "":
		return e
	}
	return e + "\n" + o
}

// bound cuts s to maxCompileOutput bytes, on a UTF-8 boundary.
func bound(s string) string {
	if len(s) <= maxCompileOutput {
		return s
	}
	cut := maxCompileOutput
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "\n... (output truncated)"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
