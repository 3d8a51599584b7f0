package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
)

// tmpSeed is a cache as a run finds it in /tmp before it starts.
var tmpSeed = []sandbox.File{
	{Path: "cache/fontlist.json", Content: []byte(`{"_version": 1}`)},
	{Path: "top", Content: []byte("top\n"), Mode: 0o600},
}

// tmpCheck prints what a run finds of tmpSeed: the contents, the owner
// and mode of each file and of the directory made for it (the program's
// user: the run may change them), and whether any of /tmp is a mount of
// its own beneath /tmp (none: a copy, not the host's file).
const tmpCheck = `cat /tmp/cache/fontlist.json; echo; cat /tmp/top; ` +
	`stat -c '%n %a %u' /tmp/cache /tmp/cache/fontlist.json /tmp/top | sed "s/ $(id -u)\$/ me/"; ` +
	`grep -c ' /tmp/' /proc/self/mountinfo || true`

const tmpClean = `{"_version": 1}
top
/tmp/cache 755 me
/tmp/cache/fontlist.json 644 me
/tmp/top 600 me
0
`

// tmpCorrupt is a run that changes, replaces and removes its copies.
const tmpCorrupt = `echo garbage > /tmp/cache/fontlist.json && rm /tmp/top && ` +
	`mv /tmp/cache /tmp/old && mkdir /tmp/cache && ln -s /etc/passwd /tmp/cache/fontlist.json && echo changed`

// testTmpFiles: a TmpFiler writes a spec's TmpFiles into the run's /tmp,
// owned by the program's user, with a private workspace or a host one;
// what a run does to its copies, the next run does not see. A backend
// that places none refuses a spec that has some.
func (s *suite) testTmpFiles(t *testing.T) {
	spec := func(script string) *sandbox.Spec {
		sp := s.sh(script)
		sp.TmpFiles = tmpSeed
		return sp
	}
	if !sandbox.PlacesTmpFiles(s.Backend) {
		_, err := s.Backend.Run(context.Background(), spec("true"))
		if !errors.Is(err, sandbox.ErrInvalidSpec) || !strings.Contains(err.Error(), "TmpFiles") {
			t.Fatalf("a backend that places no TmpFiles ran a spec with some: %v", err)
		}
		return
	}
	check := func(t *testing.T, sp *sandbox.Spec) {
		t.Helper()
		res := s.run(t, sp)
		expect(t, res, sandbox.StatusOK)
		if string(res.Stdout) != tmpClean {
			t.Fatalf("the run finds\n%s%s\nwant\n%s", res.Stdout, res.Stderr, tmpClean)
		}
	}
	check(t, spec(tmpCheck))
	res := s.run(t, spec(tmpCorrupt))
	expect(t, res, sandbox.StatusOK)
	if string(res.Stdout) != "changed\n" {
		t.Fatalf("the run could not change its copies: %q %q", res.Stdout, res.Stderr)
	}
	check(t, spec(tmpCheck))
	if !capws.Supported() {
		return
	}
	d, err := capws.New("", "tmpfiles-ws-", sandbox.DefaultLimits.WorkspaceSize, 0)
	testutil.Require(t, err == nil, "no capped host workspace here")
	defer func() { _ = d.Remove() }()
	sp := spec(tmpCheck)
	sp.Workspace = d.Path
	check(t, sp)
}

// testSeriesTmpFiles: in a kept sandbox, each run gets its own copies of
// the spec's TmpFiles, whatever the run before did to its own.
func (s *suite) testSeriesTmpFiles(t *testing.T, reuser sandbox.Reuser) {
	ser := reuser.Series()
	defer ser.Close()
	spec := func(script string) *sandbox.Spec {
		sp := s.seriesSh(script)
		sp.TmpFiles = tmpSeed
		return sp
	}
	if !sandbox.PlacesTmpFiles(s.Backend) {
		if _, err := ser.Run(context.Background(), spec("true")); !errors.Is(err, sandbox.ErrInvalidSpec) {
			t.Fatalf("a backend that places no TmpFiles ran a spec with some in a series: %v", err)
		}
		return
	}
	clean, pid0 := s.seriesRun(t, ser, spec(tmpCheck))
	expect(t, clean, sandbox.StatusOK)
	if string(clean.Stdout) != tmpClean {
		t.Fatalf("the first run finds\n%s%s", clean.Stdout, clean.Stderr)
	}
	res, pid1 := s.seriesRun(t, ser, spec(tmpCorrupt))
	expect(t, res, sandbox.StatusOK)
	reused(t, pid0, pid1)
	after, pid2 := s.seriesRun(t, ser, spec(tmpCheck))
	expect(t, after, sandbox.StatusOK)
	reused(t, pid1, pid2)
	if !bytes.Equal(after.Stdout, clean.Stdout) {
		t.Fatalf("after a run that changed its copies the next finds\n%s%s", after.Stdout, after.Stderr)
	}
}
