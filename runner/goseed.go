package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

// goCacheDir is the GOCACHE of a Go compile step, relative to its
// workspace. Go needs its build cache writable; a private one per compile
// keeps submissions from poisoning each other's builds.
const goCacheDir = ".gocache"

// A cold Go build cache rebuilds the runtime and every standard package a
// program imports: tens of seconds, close to the compile limit. So the
// first Go compile of a toolchain builds a seed (seedProgram, importing
// what solutions commonly use) with a cache in its workspace, and keeps
// that cache under the cache directory as go-seed-<version>-<hash>. Every
// later compile starts with a private copy of the seed, made of hard links
// when running as root (the seed's files belong to root, so user code,
// never host root, cannot change them through the links; it can only
// unlink its own names) and of real copies otherwise.
const seedProgram = `package main

import (
	"bufio"
	"bytes"
	"container/heap"
	"container/list"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/bits"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

var (
	_ = bytes.NewReader
	_ = heap.Init
	_ = list.New
	_ = errors.New
	_ = io.EOF
	_ = math.MaxInt
	_ = big.NewInt
	_ = bits.Len
	_ = regexp.MustCompile
	_ = slices.Sort[[]int]
	_ = sort.Ints
	_ = strconv.Itoa
	_ = strings.Fields
	_ = sync.Mutex{}
	_ = time.Now
	_ = unicode.IsDigit
)

func main() {
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintln(w, "seed")
}
`

// Limits of the seed build, which compiles the standard library: our own
// code, so the compile limits' time is not enough but no risk.
const (
	seedWallTime = 5 * time.Minute
	seedCPUTime  = 10 * time.Minute
	seedMemory   = sandbox.GiB
)

// seedRetry is how long a failed seed build is remembered: compiles
// meanwhile start with an empty cache instead of trying again.
const seedRetry = 10 * time.Minute

// seedGroup builds each seed once per process.
type seedGroup struct {
	mu    sync.Mutex
	seeds map[string]*seedState
}

type seedState struct {
	done     chan struct{}
	dir      string
	err      error
	finished time.Time
}

// seedGoCache puts a copy of the seed for step's toolchain and
// environment in ws/.gocache, building the seed first if need be. A seed
// that cannot be built costs speed, not correctness: the compile then
// starts with an empty cache.
func (r *Runner) seedGoCache(ctx context.Context, step *compileStep, ws string) error {
	dst := filepath.Join(ws, goCacheDir)
	seed, err := r.goSeed(ctx, step)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		r.log.Warn("Go build cache seed unavailable; compiling with an empty cache", "error", err)
		return mkdirOpen(dst)
	}
	if err := cloneTree(seed, dst, os.Geteuid() == 0); err != nil {
		return fmt.Errorf("unable to copy the Go build cache seed: %w", err)
	}
	// A fresh trim stamp: Go then does not walk the seed to trim it after
	// the build. It is ours, so Go can read it but not rewrite it.
	stamp := strconv.FormatInt(time.Now().Unix(), 10)
	return os.WriteFile(filepath.Join(dst, "trim.txt"), []byte(stamp), 0o644) //nolint:forbidigo // dst was made by cloneTree before the sandbox ran
}

// goSeed returns the seed directory for step's toolchain, building it once
// in the background: a caller that gives up does not stop it, since every
// later compile needs it.
func (r *Runner) goSeed(ctx context.Context, step *compileStep) (string, error) {
	id := seedID(step)
	dir := filepath.Join(r.cache.dir, "go-seed-"+id)
	r.seeds.mu.Lock()
	if r.seeds.seeds == nil {
		r.seeds.seeds = map[string]*seedState{}
	}
	s, ok := r.seeds.seeds[id]
	if ok && s.err != nil && time.Since(s.finished) > seedRetry {
		ok = false
	}
	if !ok {
		s = &seedState{done: make(chan struct{})}
		r.seeds.seeds[id] = s
		go func() {
			defer close(s.done)
			err := r.ensureSeed(step, dir)
			r.seeds.mu.Lock()
			s.err, s.finished = err, time.Now()
			if err == nil {
				s.dir = dir
			}
			r.seeds.mu.Unlock()
		}()
	}
	r.seeds.mu.Unlock()
	select {
	case <-s.done:
		r.seeds.mu.Lock()
		defer r.seeds.mu.Unlock()
		return s.dir, s.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// ensureSeed builds the seed dir unless it is there already (built by
// another process, or before a restart).
func (r *Runner) ensureSeed(step *compileStep, dir string) error {
	if fi, err := os.Lstat(dir); err == nil && fi.IsDir() { //nolint:forbidigo // the seed's directory in the cache, host-owned
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), seedWallTime+time.Minute)
	defer cancel()
	return r.buildSeed(ctx, step, dir)
}

var (
	unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)
	goVersion  = regexp.MustCompile(`go[0-9][0-9A-Za-z.]*`)
)

// seedID names a seed by the toolchain's version and a hash of everything
// that decides the cache's contents.
func seedID(step *compileStep) string {
	b, _ := json.Marshal([]any{cacheFormat, step.version, step.lang.Compile, step.env, step.lang.Mounts})
	sum := sha256.Sum256(b)
	v := step.version
	if f := goVersion.FindString(v); f != "" {
		v = f
	}
	v = unsafeName.ReplaceAllString(v, "_")
	if len(v) > 32 {
		v = v[:32]
	}
	return v + "-" + hex.EncodeToString(sum[:6])
}

// buildSeed compiles seedProgram with an empty cache in the workspace and
// keeps that cache as dir.
func (r *Runner) buildSeed(ctx context.Context, step *compileStep, dir string) error {
	seed := *step
	// The seed is the language's single file, whatever the step's own
	// program is made of, and it is shared by every request: none's
	// compiler flags go in.
	l := step.lang
	src := l.SourceName(seedProgram)
	seed.files = []sandbox.File{{Path: src, Content: []byte(seedProgram), Mode: 0o644}}
	seed.args = l.CompileArgs(lang.Vars{Source: path.Join(sandbox.WorkspaceDir, src), MemoryMB: int(r.compileLimits.Memory / sandbox.MiB)})
	limits := r.compileLimits
	limits.WallTime = max(limits.WallTime, seedWallTime)
	limits.CPUTime = max(limits.CPUTime, seedCPUTime)
	limits.Memory = max(limits.Memory, seedMemory)
	ws, err := r.workspace("seed-build-", limits.WorkspaceSize)
	if err != nil {
		return err
	}
	defer r.removeWorkspace(ws)
	if err := mkdirOpen(filepath.Join(ws, goCacheDir)); err != nil {
		return err
	}
	res, err := r.backend.Run(ctx, r.compileSpec(&seed, ws, limits))
	if err != nil {
		return fmt.Errorf("seed build: %w", err)
	}
	if res.Status != sandbox.StatusOK {
		return fmt.Errorf("seed build failed: %s", compileError(res, limits).Output)
	}
	staged, err := r.cache.mkTemp("seed-")
	if err != nil {
		return err
	}
	if err := copyOut(filepath.Join(ws, goCacheDir), staged, nil, seedLimits); err != nil {
		_ = removeTree(staged)
		return fmt.Errorf("unable to keep the seed: %w", err)
	}
	if err := os.Chmod(staged, 0o755); err != nil { //nolint:forbidigo // the staged seed, host-owned
		_ = removeTree(staged)
		return err
	}
	if err := os.Rename(staged, dir); err != nil { //nolint:forbidigo // both paths in the cache, host-owned
		_ = removeTree(staged)
		// Another process stored it first.
		if errors.Is(err, fs.ErrExist) || isNotEmpty(err) {
			return nil
		}
		return err
	}
	return nil
}

// mkdirOpen creates a directory that the sandbox's user, whoever it is on
// the host, can write. It lies inside a workspace only that user can
// enter.
func mkdirOpen(p string) error {
	if err := os.Mkdir(p, 0o777); err != nil { //nolint:forbidigo // a workspace no sandbox has run in yet
		return err
	}
	return os.Chmod(p, 0o777) //nolint:forbidigo // the directory just made
}

// cloneTree recreates the seed src at dst: writable directories, and its
// files as hard links when link is set and the file system allows, else
// as copies.
func cloneTree(src, dst string, link bool) error {
	// Both trees are ours: src is a seed stored through copyOut (regular
	// files and directories only), dst a workspace no sandbox has run in.
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error { //nolint:forbidigo // both trees are ours, see above
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return mkdirOpen(target)
		case !d.Type().IsRegular():
			return nil
		case rel == "trim.txt":
			return nil
		}
		if link {
			err := os.Link(p, target) //nolint:gosec,forbidigo // both trees are ours, see above
			if err == nil || !errors.Is(err, syscall.EXDEV) {
				return err
			}
		}
		return copyFile(p, target)
	})
}

// copyFile copies a file of ours.
func copyFile(src, dst string) error {
	in, err := os.Open(src) //nolint:forbidigo // a seed file, written by copyOut
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644) //nolint:forbidigo // a workspace no sandbox has run in yet
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
