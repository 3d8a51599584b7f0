package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

// A language's tmp seed (lang.TmpSeed) is a cache its runtime would
// otherwise build in every run's /tmp: matplotlib's font list. It is
// built once per backend, by a sandboxed run of the recipe's own command
// with nothing of a request in it, so that it is derived from the host's
// toolchain and fonts alone; it then stays in this process's memory, out
// of every sandbox's reach, and each later run gets a copy of its own in
// its /tmp (sandbox.Spec.TmpFiles), which it may change or delete without
// another run seeing it.

// maxSeedBytes bounds a seed's file: matplotlib's font list is some
// 30 KiB with a few fonts, a few hundred KiB with thousands.
const maxSeedBytes = 8 << 20

// tmpSeedLimits bound the run that builds a seed.
var tmpSeedLimits = sandbox.Limits{
	WallTime: 2 * time.Minute, CPUTime: 2 * time.Minute, Memory: 512 * sandbox.MiB,
	OutputBytes: maxSeedBytes + 4096,
}

// seedName is what a seed's file may be called: a plain name.
var seedName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// seedKey names a seed by what makes it: the backend (another has other
// toolchains), the command, its environment and where it goes. Two
// languages of one runtime (python, python3) share theirs.
type seedKey struct {
	backend sandbox.Backend
	made    string
}

type seed struct {
	once  sync.Once
	err   error
	files atomic.Pointer[[]sandbox.File]
}

// seeds holds the seeds of every Builder of this process, so that the
// builders that share a backend (the executor's, the invoker's, the
// judge's) build each once.
var seeds sync.Map // seedKey -> *seed

// seedOf returns the seed of l on b's backend, made on first use when
// create is set (else nil until PrepareSeeds made it), with its command
// and directory; nil when l has none or the backend places no TmpFiles.
func (b *Builder) seedOf(l *lang.Language, create bool) (*seed, []string, string) {
	argv, dir := l.SeedArgs()
	if argv == nil || !sandbox.PlacesTmpFiles(b.backend) {
		return nil, nil, ""
	}
	key := seedKey{backend: b.backend,
		made: strings.Join(argv, "\x00") + "\x00\x00" + strings.Join(l.Env, "\x00") + "\x00\x00" + dir}
	v, ok := seeds.Load(key)
	if !ok && create {
		v, _ = seeds.LoadOrStore(key, &seed{})
	}
	if v == nil {
		return nil, nil, ""
	}
	return v.(*seed), argv, dir
}

// tmpFiles are the files a run of l finds in its /tmp: its seed's, once
// it is built; nil before, or without one. It adds nothing to seeds, so
// that a process that never prepares them keeps no backend there.
func (b *Builder) tmpFiles(l *lang.Language) []sandbox.File {
	s, _, _ := b.seedOf(l, false)
	if s == nil {
		return nil
	}
	if f := s.files.Load(); f != nil {
		return slices.Clone(*f)
	}
	return nil
}

// PrepareSeeds builds the tmp seed of each language of the table that
// has one and whose toolchain is here, once per backend and language:
// a later call, from any Builder on the same backend, finds it made. The
// runs that start once a seed is ready find it in their /tmp; the others
// build their cache themselves, as they would without. A backend that
// places no TmpFiles (docker) gets no seed. The error joins the seeds
// that could not be built, their language named: where the library is
// not installed its command fails, and its runs go without.
func (b *Builder) PrepareSeeds(ctx context.Context) error {
	var errs []error
	for _, l := range b.langs.All() {
		if argv, _ := l.SeedArgs(); argv == nil || b.Check(ctx, l) != nil {
			continue
		}
		// After Check: the command names the toolchain found.
		s, argv, dir := b.seedOf(l, true)
		if s == nil {
			continue
		}
		s.once.Do(func() {
			var files []sandbox.File
			files, s.err = b.buildSeed(ctx, l, argv, dir)
			if s.err == nil {
				s.files.Store(&files)
			}
		})
		if s.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", l.ID, s.err))
		}
	}
	return errors.Join(errs...)
}

// buildSeed runs argv, l's seed command, in a sandbox of its own and
// reads its output: the file's name on the first line, then its content.
func (b *Builder) buildSeed(ctx context.Context, l *lang.Language, argv []string, dir string) ([]sandbox.File, error) {
	limits := l.RunLimits(tmpSeedLimits)
	res, err := b.backend.Run(ctx, &sandbox.Spec{
		Args:   argv,
		Env:    lang.Environment(l.Env, l.ThreadEnvironment(limits)),
		Dir:    sandbox.WorkspaceDir,
		Mounts: slices.Clone(l.Mounts),
		Limits: limits,
	})
	if err != nil {
		return nil, fmt.Errorf("unable to build the /tmp seed: %w", err)
	}
	if res.Status != sandbox.StatusOK || res.ExitCode != 0 || res.StdoutTruncated {
		return nil, fmt.Errorf("its /tmp seed was not built: %s, exit code %d: %.200s", res.Status, res.ExitCode, bytes.TrimSpace(res.Stderr))
	}
	return seedFiles(res.Stdout, dir)
}

// seedFiles reads a seed command's output: the file's name on its first
// line, a plain name, then its content, at most maxSeedBytes.
func seedFiles(out []byte, dir string) ([]sandbox.File, error) {
	name, content, ok := bytes.Cut(out, []byte("\n"))
	switch {
	case !ok:
		return nil, errors.New("its /tmp seed command printed no file name on a line of its own")
	case !seedName.Match(name):
		return nil, fmt.Errorf("its /tmp seed command named the file %.130q, not a plain file name", name)
	case len(content) > maxSeedBytes:
		return nil, fmt.Errorf("its /tmp seed is %d bytes, more than %d", len(content), maxSeedBytes)
	}
	return []sandbox.File{{Path: dir + "/" + string(name), Content: bytes.Clone(content), Mode: 0o644}}, nil
}
