package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/internal/testutil"
)

// asOrdinaryUser calls f as uid 65534 when the tests run as root: on a
// thread of its own that gives up root (and so every capability) for
// good and dies with its goroutine. As an ordinary user it calls f.
func asOrdinaryUser(t *testing.T, f func() error) error {
	t.Helper()
	if os.Geteuid() != 0 {
		return f()
	}
	done := make(chan error, 1)
	go func() {
		// Never unlocked: the thread leaves with the goroutine, so no
		// other goroutine runs as that user.
		runtime.LockOSThread()
		if _, _, errno := unix.RawSyscall(unix.SYS_SETRESUID, 65534, 65534, 65534); errno != 0 {
			done <- errno
			return
		}
		done <- f()
	}()
	return <-done
}

// TestRefusedWithoutRoot: without root a session's workspace cannot be a
// size-capped tmpfs, and a session is refused, saying why and what would
// make it work, rather than given a directory without a cap.
func TestRefusedWithoutRoot(t *testing.T) {
	ws := filepath.Join(testutil.ReachableDir(t, "session-"), "ws")
	if err := os.Mkdir(ws, 0o777); err != nil { //nolint:gosec // the ordinary user must write it
		t.Fatal(err)
	}
	if err := os.Chmod(ws, 0o777); err != nil { //nolint:gosec // as above, whatever the umask
		t.Fatal(err)
	}
	err := asOrdinaryUser(t, func() error { return mountTmpfs(ws, 1<<20, 100) })
	if !errors.Is(err, ErrDisabled) {
		t.Fatalf("mountTmpfs as an ordinary user: %v, want ErrDisabled", err)
	}
	for _, want := range []string{"without root", "capped", "run coderunner as root"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q: %v", want, err)
		}
	}
	if isMountPoint(ws) {
		_ = unmount(ws)
		t.Error("a tmpfs was mounted as an ordinary user")
	}
}

// TestKeptSessions: without root a session's workspace is a tmpfs the
// workspace keeper mounts in its own namespace (here as root too): the
// kernel holds the program to its cap, its files stay between calls,
// another session does not see them, and ending the session removes the
// workspace and its directory.
func TestKeptSessions(t *testing.T) {
	s, _ := open(t, Options{MaxBytes: 1 << 20})
	s.inKeeper = true
	ex := &fileExecutor{}
	res := mustRun(t, s, ex, "a", "write big 2000000")
	if res.Status != execute.StatusExecutionError || !strings.Contains(res.Stderr, "no space left") {
		t.Fatalf("writing past the kept tmpfs's cap: status %s, stderr %q", res.Status, res.Stderr)
	}
	mustRun(t, s, ex, "a", "write small 10")
	if res := mustRun(t, s, ex, "a", "read small"); res.Stdout == "missing" {
		t.Error("a session's file did not outlive its call")
	}
	if res := mustRun(t, s, ex, "b", "read small"); res.Stdout != "missing" {
		t.Errorf("one session read another's file: %q", res.Stdout)
	}
	l, err := s.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	dir, host := l.Dir(), l.e.host
	l.Release()
	if !capws.Kept(dir) {
		t.Fatalf("the workspace %s is not the keeper's", dir)
	}
	if err := capws.Check(dir, 1<<20); err != nil {
		t.Errorf("the kept workspace: %v", err)
	}
	if ents, err := os.ReadDir(host); err != nil || len(ents) != 0 {
		t.Errorf("the host's directory beneath the kept workspace: %d entries, %v", len(ents), err)
	}
	if err := s.Delete("a"); err != nil {
		t.Fatal(err)
	}
	if capws.Kept(dir) {
		t.Error("an ended session's workspace is still kept")
	}
	if _, err := os.Lstat(host); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an ended session's directory is left: %v", err)
	}
}
