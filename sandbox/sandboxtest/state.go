package sandboxtest

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/sandbox"
)

// stateProbe is one program that, told "leave" on stdin, leaves behind
// everything a run can leave for the next one to read (process ids
// used up, SysV and POSIX IPC objects, files in the scratch directories
// and /dev/mqueue), and otherwise prints what of it it finds. Runs of
// one program are what a backend may serve from a kept sandbox, so the
// same spec serves both.
const stateProbe = `read mode
if [ "$mode" = leave ]; then
	i=0; while [ $i -lt 123 ]; do /bin/true; i=$((i+1)); done
	echo secret > /tmp/left; echo secret > /dev/shm/left; echo secret > /workspace/left
	CREATE=1 PY -c "$IPC"
else
	sh -c 'echo child $$'
	ls -A /tmp /dev/shm /workspace
	ls -A /dev/mqueue 2>/dev/null
	CREATE=0 PY -c "$IPC"
fi`

// stateIPC creates (CREATE=1) or looks for SysV shared memory, a
// semaphore set, a message queue and a POSIX message queue (a small one:
// a sandbox's message queue bytes are capped).
const stateIPC = `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
rt = ctypes.CDLL("librt.so.1", use_errno=True)
create = os.environ.get("CREATE") == "1"
flags = 0o1000 | 0o600 if create else 0
attr = (ctypes.c_long * 8)(0, 1, 64, 0)
mq = rt.mq_open(b"/seed", (os.O_CREAT | os.O_RDWR) if create else os.O_RDWR, 0o600, attr if create else None)
print("shm", libc.shmget(0x5eed, 4096, flags) >= 0, "sem", libc.semget(0x5eed, 1, flags) >= 0,
      "msg", libc.msgget(0x5eed, flags) >= 0, "mq", mq >= 0)
`

// testNothingOfAnEarlierRun runs one program three times through the
// backend, as separate requests would: a clean run, one that leaves
// everything it can, and a clean one again, which must see what the
// first saw. A backend that keeps a sandbox (or a container) between
// runs of one program must reset all of it.
func (s *suite) testNothingOfAnEarlierRun(t *testing.T) {
	spec := func(mode string) *sandbox.Spec {
		sp := s.sh(strings.ReplaceAll(stateProbe, "PY", s.Python))
		sp.Env = append(sp.Env, "IPC="+stateIPC)
		sp.Stdin = strings.NewReader(mode + "\n")
		return sp
	}
	clean := s.run(t, spec("look"))
	expect(t, clean, sandbox.StatusOK)
	if !bytes.Contains(clean.Stdout, []byte("shm False sem False msg False mq False")) {
		t.Fatalf("a clean run sees IPC objects, or cannot look for them: stdout %q stderr %q", clean.Stdout, clean.Stderr)
	}
	left := s.run(t, spec("leave"))
	expect(t, left, sandbox.StatusOK)
	if string(left.Stdout) != "shm True sem True msg True mq True\n" {
		t.Fatalf("leaving IPC objects: stdout %q stderr %q", left.Stdout, left.Stderr)
	}
	after := s.run(t, spec("look"))
	expect(t, after, sandbox.StatusOK)
	// A new container's own processes may take a process id more or less
	// (docker), but not the 123 the run before used up.
	cleanPid, cleanRest := childPid(t, clean.Stdout)
	afterPid, afterRest := childPid(t, after.Stdout)
	if afterPid-cleanPid >= 60 || cleanPid-afterPid >= 60 || !bytes.Equal(afterRest, cleanRest) {
		t.Fatalf("after a run that forked 123 times and left files and IPC objects the next run sees\n%s\nwhere a clean run sees\n%s", after.Stdout, clean.Stdout)
	}
}

// childPid takes the first line, "child <pid>", off the probe's output.
func childPid(t *testing.T, out []byte) (int, []byte) {
	t.Helper()
	first, rest, _ := bytes.Cut(out, []byte("\n"))
	pid, err := strconv.Atoi(strings.TrimPrefix(string(first), "child "))
	if err != nil {
		t.Fatalf("no child process id first in %q", out)
	}
	return pid, rest
}
