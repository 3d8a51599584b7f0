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

// maxTmpSeedBytes bounds a seed's file: matplotlib's font list is some
// 30 KiB with a few fonts, a few hundred KiB with thousands.
const maxTmpSeedBytes = 8 << 20

// tmpSeedLimits bound the run that builds a seed.
var tmpSeedLimits = sandbox.Limits{
	WallTime: 2 * time.Minute, CPUTime: 2 * time.Minute, Memory: 512 * sandbox.MiB,
	OutputBytes: maxTmpSeedBytes + 4096,
}

// tmpSeedName is what a seed's file may be called: a plain name.
var tmpSeedName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// tmpSeedKey names a seed by what makes it: the backend (another has other
// toolchains), the command, its environment and where it goes. Two
// languages of one runtime (python, python3) share theirs.
type tmpSeedKey struct {
	backend sandbox.Backend
	made    string
}

type tmpSeed struct {
	once  sync.Once
	err   error
	files atomic.Pointer[[]sandbox.File]
}

// tmpSeeds holds the /tmp seeds of every Builder of this process, so
// that the builders that share a backend (the executor's, the invoker's,
// the judge's) build each once.
var tmpSeeds sync.Map // tmpSeedKey -> *tmpSeed

// tmpSeedOf returns the seed of l on b's backend, made on first use when
// create is set (else nil until PrepareSeeds made it), with its command
// and directory; nil when l has none or the backend places no TmpFiles.
func (b *Builder) tmpSeedOf(l *lang.Language, create bool) (*tmpSeed, []string, string) {
	argv, dir := l.SeedArgs()
	if argv == nil || !sandbox.PlacesTmpFiles(b.backend) {
		return nil, nil, ""
	}
	key := tmpSeedKey{backend: b.backend,
		made: strings.Join(argv, "\x00") + "\x00\x00" + strings.Join(l.Env, "\x00") + "\x00\x00" + dir}
	v, ok := tmpSeeds.Load(key)
	if !ok && create {
		v, _ = tmpSeeds.LoadOrStore(key, &tmpSeed{})
	}
	if v == nil {
		return nil, nil, ""
	}
	return v.(*tmpSeed), argv, dir
}

// tmpFiles are the files a run of l finds in its /tmp: its seed's, once
// it is built; nil before, or without one. It adds nothing to seeds, so
// that a process that never prepares them keeps no backend there.
func (b *Builder) tmpFiles(l *lang.Language) []sandbox.File {
	s, _, _ := b.tmpSeedOf(l, false)
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
		s, argv, dir := b.tmpSeedOf(l, true)
		if s == nil {
			continue
		}
		s.once.Do(func() {
			var files []sandbox.File
			files, s.err = b.buildTmpSeed(ctx, l, argv, dir)
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

// buildTmpSeed runs argv, l's seed command, in a sandbox of its own and
// reads its output: the file's name on the first line, then its content.
func (b *Builder) buildTmpSeed(ctx context.Context, l *lang.Language, argv []string, dir string) ([]sandbox.File, error) {
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
	return tmpSeedFiles(res.Stdout, dir)
}

// tmpSeedFiles reads a seed command's output: the file's name on its first
// line, a plain name, then its content, at most maxTmpSeedBytes.
func tmpSeedFiles(out []byte, dir string) ([]sandbox.File, error) {
	name, content, ok := bytes.Cut(out, []byte("\n"))
	switch {
	case !ok:
		return nil, errors.New("its /tmp seed command printed no file name on a line of its own")
	case !tmpSeedName.Match(name):
		return nil, fmt.Errorf("its /tmp seed command named the file %.130q, not a plain file name", name)
	case len(content) > maxTmpSeedBytes:
		return nil, fmt.Errorf("its /tmp seed is %d bytes, more than %d", len(content), maxTmpSeedBytes)
	}
	return []sandbox.File{{Path: dir + "/" + string(name), Content: bytes.Clone(content), Mode: 0o644}}, nil
}
