package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
)

// wsCap is the workspace cap of the attacks below: small, so that they
// are quick, and well under their memory limit, so that the cap, not the
// memory cgroup the tmpfs pages are charged to, stops them.
const wsCap = 16 * sandbox.MiB

// capPrelude reports how a write stopped: "capped" when the kernel
// refused it for lack of room (ENOSPC, or EDQUOT under a quota).
const capPrelude = `
import errno, os, sys
def stopped(e):
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        print("capped")
    else:
        print("other error", e)
    sys.exit(0)
MiB = b"x" * (1 << 20)
`

// capAttacks are programs that try to put more than wsCap on the host
// through the workspace; each prints "capped" when the cap stopped it.
var capAttacks = []struct{ name, code string }{
	{"many files", `
try:
    for i in range(1024):
        with open("f%d" % i, "wb") as f:
            f.write(MiB)
except OSError as e:
    stopped(e)
print("not stopped")
`},
	{"one big file", `
try:
    with open("big", "wb") as f:
        for i in range(1024):
            f.write(MiB)
            f.flush()
except OSError as e:
    stopped(e)
print("not stopped")
`},
	{"sparse file", `
# An honest sparse file is allowed: its apparent size (1 GiB, the file
# size limit) costs nothing.
with open("sparse", "wb") as f:
    f.truncate((1 << 30) - 4)
    f.seek(1 << 29)
    f.write(b"end")
try:
    with open("sparse", "r+b") as f:
        for i in range(31):
            f.seek(i << 25)
            f.write(MiB)
            f.flush()
except OSError as e:
    stopped(e)
print("not stopped")
`},
	{"fallocate", `
try:
    for i in range(64):
        fd = os.open("fa%d" % i, os.O_CREAT | os.O_WRONLY, 0o644)
        os.posix_fallocate(fd, 0, 64 << 20)
        os.close(fd)
except OSError as e:
    stopped(e)
print("not stopped")
`},
	{"hard links", `
# Links of one big file cost no room, and cannot leave the workspace.
with open("big", "wb") as f:
    for i in range(8):
        f.write(MiB)
for i in range(2000):
    os.link("big", "l%d" % i)
for out in ("/tmp/out", "/dev/shm/out"):
    try:
        os.link("big", out)
        print("linked out to", out)
    except OSError as e:
        if e.errno not in (errno.EXDEV, errno.ENOENT, errno.EROFS, errno.EACCES):
            print("link out:", e)
try:
    with open("more", "wb") as f:
        for i in range(1024):
            f.write(MiB)
            f.flush()
except OSError as e:
    stopped(e)
print("not stopped")
`},
	{"empty files", `
try:
    for i in range(1000000):
        open("e%d" % i, "w").close()
except OSError as e:
    stopped(e)
print("not stopped")
`},
	{"empty directories", `
try:
    for i in range(1000000):
        os.mkdir("d%d" % i)
except OSError as e:
    stopped(e)
print("not stopped")
`},
}

// testHostWorkspaceCapped attacks the cap of a host workspace, as the
// callers make it (a capws tmpfs): each program tries to put more than
// the cap on the host, in its own way; the kernel must refuse the write
// with ENOSPC while it runs, and the host must hold no more than the cap.
func (s *suite) testHostWorkspaceCapped(t *testing.T) {
	testutil.Require(t, capws.Supported(), "host workspaces are capped by a tmpfs mount, which needs root")
	for _, tc := range capAttacks {
		t.Run(tc.name, func(t *testing.T) {
			// In the system's temporary directory, which bwrap's user
			// can cross.
			ws, err := capws.New("", "capped-ws-", wsCap, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := ws.Remove(); err != nil {
					t.Error(err)
				}
			}()
			spec := s.py(capPrelude + tc.code)
			spec.Workspace = ws.Path
			spec.Limits.WorkspaceSize = wsCap
			spec.Limits.FileSize = sandbox.GiB
			spec.Limits.Memory = 256 * sandbox.MiB
			res := s.run(t, spec)
			expect(t, res, sandbox.StatusOK)
			if !bytes.Equal(res.Stdout, []byte("capped\n")) {
				t.Fatalf("the workspace cap did not stop the program: %s %s", res.Stdout, res.Stderr)
			}
			var st unix.Statfs_t
			if err := unix.Statfs(ws.Path, &st); err != nil {
				t.Fatal(err)
			}
			if used := int64(st.Blocks-st.Bfree) * st.Bsize; used > wsCap { //nolint:gosec // block counts of a tmpfs fit
				t.Fatalf("the host holds %d bytes of the workspace, more than its cap %d", used, wsCap)
			}
		})
	}
}

// testHostWorkspaceUncapped attacks the backend's own check: a host
// directory that is not a capped mount, as the workspace or as a writable
// mount, is refused before anything runs,
// so that a caller that forgets to cap its workspace cannot lend the
// host's disk to a program; so is a capped mount larger than the spec's
// WorkspaceSize.
func (s *suite) testHostWorkspaceUncapped(t *testing.T) {
	plain := t.TempDir()
	spec := s.sh("echo written > /workspace/f")
	spec.Workspace = plain
	res, err := s.Backend.Run(context.Background(), spec)
	if !errors.Is(err, sandbox.ErrInvalidSpec) {
		t.Fatalf("a plain host directory as the workspace: %v %+v, want ErrInvalidSpec", err, res)
	}
	if _, err := os.Lstat(filepath.Join(plain, "f")); err == nil {
		t.Fatal("the program wrote into an uncapped host workspace")
	}
	spec = s.sh("echo written > /scratch/f")
	spec.Mounts = append(spec.Mounts[:len(spec.Mounts):len(spec.Mounts)], sandbox.Mount{Source: plain, Target: "/scratch", Writable: true})
	if _, err := s.Backend.Run(context.Background(), spec); !errors.Is(err, sandbox.ErrInvalidSpec) {
		t.Fatalf("a plain host directory as a writable mount: %v, want ErrInvalidSpec", err)
	}
	if _, err := os.Lstat(filepath.Join(plain, "f")); err == nil {
		t.Fatal("the program wrote into an uncapped writable mount")
	}
	if !capws.Supported() {
		return
	}
	ws, err := capws.New("", "big-ws-", 2*wsCap, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ws.Remove() }()
	spec = s.sh("true")
	spec.Workspace = ws.Path
	spec.Limits.WorkspaceSize = wsCap
	if _, err := s.Backend.Run(context.Background(), spec); !errors.Is(err, sandbox.ErrInvalidSpec) {
		t.Fatalf("a host workspace larger than WorkspaceSize: %v, want ErrInvalidSpec", err)
	}
}
