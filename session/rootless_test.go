package session

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

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
