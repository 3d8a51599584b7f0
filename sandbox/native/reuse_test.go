package native_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
)

// The backend keeps a sandbox whose run ended well for a later run (unless
// Options.PerRequest). These tests are two requests each: the first leaves
// what it can in the sandbox, the second, in the same sandbox, looks for
// it in every way a program can: files, processes, IPC objects, mounts,
// environment, cgroup counters, sockets, kernel keyrings. Each checks that
// the second run was indeed served by the kept sandbox, or, where the
// backend must not reuse it (a socket left behind), that it was not.

const python = "/usr/bin/python3"

// reuseRun runs args in b and returns its result, which must be ok.
func reuseRun(t *testing.T, b *native.Backend, mutate func(*sandbox.Spec), args ...string) *sandbox.Result {
	t.Helper()
	spec := &sandbox.Spec{
		Args:   args,
		Mounts: native.BaseMounts(),
		Limits: sandbox.Limits{WallTime: 20 * time.Second},
	}
	if mutate != nil {
		mutate(spec)
	}
	res, err := b.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusOK {
		t.Fatalf("%v: status %s, stdout %q, stderr %q", args, res.Status, res.Stdout, res.Stderr)
	}
	return res
}

// keptRun is reuseRun once the sandboxes b keeps between requests have
// said whether they are ready: without the wait a request on a slow
// machine may rightly take a warm sandbox, and a test of what a kept
// sandbox hides would then test nothing.
func keptRun(t *testing.T, b *native.Backend, mutate func(*sandbox.Spec), args ...string) *sandbox.Result {
	t.Helper()
	if !native.WaitKeptAnswered(b) {
		t.Fatal("a kept sandbox did not say within 30 s whether it is ready")
	}
	return reuseRun(t, b, mutate, args...)
}

func TestReuseHidesTheEarlierRequest(t *testing.T) {
	if _, err := os.Stat(python); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, make([]byte, 32<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(big), 0o755); err != nil {
		t.Fatal(err)
	}
	withBig := func(s *sandbox.Spec) {
		s.Mounts = append(s.Mounts, sandbox.Mount{Source: filepath.Dir(big), Target: "/data"})
	}
	tests := []struct {
		name string
		// leave is the first request's program, look the second's; each
		// may change its spec.
		leave, look             []string
		mutateLeave, mutateLook func(*sandbox.Spec)
		// check fails the test if the second run saw the first.
		check func(t *testing.T, res *sandbox.Result)
		// before runs on the host before the first request.
		before func(t *testing.T)
		// reused says whether the second request must have been served by
		// the first's sandbox (false: must not; nil: either).
		reused *bool
	}{
		{
			name:  "files in /tmp, /workspace and /dev/shm",
			leave: []string{"/bin/sh", "-c", "echo a > /tmp/left-a; echo b > /workspace/left-b; echo c > /dev/shm/left-c; mkdir -p /tmp/left-d/e && touch /tmp/left-d/e/f; chmod 777 /workspace"},
			look:  []string{"/bin/sh", "-c", "ls -A /tmp /workspace /dev/shm; stat -c %a /workspace"},
			check: func(t *testing.T, res *sandbox.Result) {
				if strings.Contains(string(res.Stdout), "left-") || !strings.HasSuffix(string(res.Stdout), "755\n") {
					t.Errorf("the second request found the first's files:\n%s", res.Stdout)
				}
			},
			reused: ptr(true),
		},
		{
			name:  "how many files were made (inode numbers)",
			leave: []string{"/bin/sh", "-c", "for d in /tmp /workspace; do i=0; while [ $i -lt 40 ]; do : > $d/f$i; i=$((i+1)); done; rm $d/f*; done"},
			look:  []string{"/bin/sh", "-c", "for d in /tmp /workspace; do : > $d/mine; stat -c %i $d/mine; done"},
			check: func(t *testing.T, res *sandbox.Result) {
				sameAsNew(t, res, "the inode numbers of its files (how many files the first made)",
					"/bin/sh", "-c", "for d in /tmp /workspace; do : > $d/mine; stat -c %i $d/mine; done")
			},
			reused: ptr(true),
		},
		{
			name:  "processes left running",
			leave: []string{"/bin/sh", "-c", "sleep 60 & (setsid sleep 61 &) ; exit 0"},
			look:  []string{python, "-c", "import os\nfor p in os.listdir('/proc'):\n  if p.isdigit():\n    try: print(p, open('/proc/'+p+'/comm').read().strip())\n    except OSError: pass"},
			check: func(t *testing.T, res *sandbox.Result) {
				if strings.Contains(string(res.Stdout), "sleep") {
					t.Errorf("the second request sees the first's processes:\n%s", res.Stdout)
				}
			},
			reused: ptr(true),
		},
		{
			name: "SysV IPC objects and POSIX message queues",
			leave: []string{python, "-c", `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
assert libc.shmget(1234, 4096, 0o1666) >= 0, os.strerror(ctypes.get_errno())
assert libc.msgget(1234, 0o1666) >= 0
assert libc.semget(1234, 1, 0o1666) >= 0
assert libc.shmget(0, 4096, 0o1666) >= 0
q = libc.mq_open(b"/left", os.O_CREAT | os.O_RDWR, 0o666, None)
print("mq", q, os.strerror(ctypes.get_errno()) if q < 0 else "")`},
			look: []string{python, "-c", `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(512)
# SHM_STAT, MSG_STAT and SEM_STAT find objects by index, keyed or not.
print("shm", sum(libc.shmctl(i, 13, buf) >= 0 for i in range(256)))
print("msg", sum(libc.msgctl(i, 11, buf) >= 0 for i in range(256)))
print("sem", sum(libc.semctl(i, 0, 18, buf) >= 0 for i in range(256)))
print("shmget", libc.shmget(1234, 0, 0), "msgget", libc.msgget(1234, 0), "semget", libc.semget(1234, 0, 0))
print("mq_open", libc.mq_open(b"/left", os.O_RDONLY))`},
			check: func(t *testing.T, res *sandbox.Result) {
				want := "shm 0\nmsg 0\nsem 0\nshmget -1 msgget -1 semget -1\nmq_open -1\n"
				if string(res.Stdout) != want {
					t.Errorf("the second request sees IPC objects:\n%s\nwant\n%s", res.Stdout, want)
				}
			},
			reused: ptr(true),
		},
		{
			name:        "environment",
			leave:       []string{"/bin/true"},
			mutateLeave: func(s *sandbox.Spec) { s.Env = []string{"LEFT_SECRET=hunter2"} },
			look:        []string{"/bin/sh", "-c", "env; cat /proc/1/environ /proc/self/environ | tr '\\0' '\\n'"},
			check: func(t *testing.T, res *sandbox.Result) {
				if strings.Contains(string(res.Stdout), "LEFT_SECRET") || strings.Contains(string(res.Stdout), "hunter2") {
					t.Errorf("the second request sees the first's environment:\n%s", res.Stdout)
				}
			},
			reused: ptr(true),
		},
		{
			name:        "a host workspace and its mount",
			leave:       []string{"/bin/sh", "-c", "echo mine > /workspace/left-file"},
			mutateLeave: func(s *sandbox.Spec) { s.Workspace = cappedDir(t) },
			look:        []string{"/bin/sh", "-c", "ls -A /workspace; grep -c ' /workspace ' /proc/self/mountinfo; : > /workspace/mine; stat -c %i /workspace/mine"},
			check: func(t *testing.T, res *sandbox.Result) {
				// The sandbox's own /workspace, which the first request's
				// covered, as new: its first file is inode 2.
				if string(res.Stdout) != "1\n2\n" {
					t.Errorf("the second request sees the first's workspace or its mount:\n%s", res.Stdout)
				}
			},
			reused: ptr(true),
		},
		{
			name:        "one host workspace, then another",
			leave:       []string{"/bin/sh", "-c", "echo mine > /workspace/left-file"},
			mutateLeave: func(s *sandbox.Spec) { s.Workspace = cappedDir(t) },
			look:        []string{"/bin/sh", "-c", "ls -A /workspace; grep -c ' /workspace ' /proc/self/mountinfo"},
			mutateLook: func(s *sandbox.Spec) {
				s.Workspace = cappedDir(t)
				if err := os.WriteFile(filepath.Join(s.Workspace, "own-file"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, res *sandbox.Result) {
				// Its own workspace, the only mount at /workspace, as in a
				// new sandbox.
				if string(res.Stdout) != "own-file\n1\n" {
					t.Errorf("the second request's workspace is not its own alone:\n%s", res.Stdout)
				}
			},
			reused: ptr(true),
		},
		{
			name:  "CPU time and memory",
			leave: []string{python, "-c", "import time\nb = bytearray(64 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"},
			look:  []string{"/bin/true"},
			check: func(t *testing.T, res *sandbox.Result) {
				if res.CPUTime > 100*time.Millisecond || res.PeakMemory > 16<<20 {
					t.Errorf("the second request is charged the first's usage: CPU %v, peak memory %d bytes", res.CPUTime, res.PeakMemory)
				}
			},
			reused: ptr(true),
		},
		{
			// The first request's scratch mounts go with its mount
			// namespace; the init says it is ready only once that is torn
			// down, so the sandbox's cgroup no longer holds their pages.
			name:  "memory of files left in /tmp and /workspace",
			leave: []string{"/bin/sh", "-c", "head -c 24000000 /dev/zero > /tmp/left; head -c 24000000 /dev/zero > /workspace/left"},
			look:  []string{"/bin/true"},
			check: func(t *testing.T, res *sandbox.Result) {
				if res.PeakMemory > 16<<20 {
					t.Errorf("the second request is charged the first's files: peak memory %d bytes", res.PeakMemory)
				}
			},
			reused: ptr(true),
		},
		{
			name: "page cache charged to the sandbox",
			before: func(t *testing.T) {
				f, err := os.Open(big)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				// Clean pages only can be dropped from the cache.
				if err := f.Sync(); err != nil {
					t.Fatal(err)
				}
				if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
					t.Fatal(err)
				}
			},
			leave:       []string{"/bin/sh", "-c", "cat /data/big > /dev/null"},
			mutateLeave: withBig,
			look:        []string{"/bin/true"},
			mutateLook:  withBig,
			check: func(t *testing.T, res *sandbox.Result) {
				if res.PeakMemory > 16<<20 {
					t.Errorf("the second request's peak memory, %d bytes, counts what the first read", res.PeakMemory)
				}
			},
		},
		{
			name: "sockets, a TCP connection in TIME_WAIT and a socket in flight",
			leave: []string{python, "-c", `import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
c = socket.create_connection(s.getsockname()); a, _ = s.accept()
c.close(); a.close(); s.close()
u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); u.bind(b"\0left-socket"); u.connect(b"\0left-socket")
socket.send_fds(u, [b"x"], [u.fileno()])
u.close()`},
			look: []string{python, "-c", `import socket
for f in ("tcp", "tcp6", "udp", "unix"):
    print(f, len(open("/proc/self/net/" + f).read().splitlines()) - 1)
u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); u.bind(b"\0left-socket"); print("bound")`},
			check: func(t *testing.T, res *sandbox.Result) {
				want := "tcp 0\ntcp6 0\nudp 0\nunix 0\nbound\n"
				if string(res.Stdout) != want {
					t.Errorf("the second request sees the first's sockets:\n%s\nwant\n%s", res.Stdout, want)
				}
			},
			reused: ptr(false),
		},
		{
			name:  "network counters",
			leave: []string{python, "-c", moveCounters},
			look:  []string{"/bin/sh", "-c", counterLook},
			check: func(t *testing.T, res *sandbox.Result) {
				sameAsNew(t, res, "the network counters", "/bin/sh", "-c", counterLook)
			},
			reused: ptr(false),
		},
		{
			// Each run has a mount namespace of its own, with a /proc of
			// its PID namespace, torn down with it: the mounts a run
			// sees are a new sandbox's.
			name:  "mounts, a run's /proc among them",
			leave: []string{"/bin/sh", "-c", "ls /proc > /dev/null"},
			look:  []string{"/bin/sh", "-c", mountsLook},
			check: func(t *testing.T, res *sandbox.Result) {
				sameAsNew(t, res, "the mounts", "/bin/sh", "-c", mountsLook)
			},
			reused: ptr(true),
		},
		{
			name:  "kernel keyrings",
			leave: []string{python, "-c", "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint(libc.syscall(248, b'user', b'left-key', b'secret', 6, -4))"},
			look:  []string{"/bin/sh", "-c", "cat /proc/keys 2>/dev/null; echo end"},
			check: func(t *testing.T, res *sandbox.Result) {
				if string(res.Stdout) != "end\n" {
					t.Errorf("the second request sees keys:\n%s", res.Stdout)
				}
			},
			reused: ptr(true),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackend(t)
			defer b.Close()
			if tt.before != nil {
				tt.before(t)
			}
			reuseRun(t, b, tt.mutateLeave, tt.leave...)
			before := native.ReusedRuns(b)
			res := keptRun(t, b, tt.mutateLook, tt.look...)
			reused := native.ReusedRuns(b) > before
			if tt.reused != nil && reused != *tt.reused {
				t.Fatalf("the second request ran in the first's sandbox: %v, want %v", reused, *tt.reused)
			}
			tt.check(t, res)
		})
	}
	if err := waitCleanNative(); err != nil {
		t.Errorf("left behind: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// sameAsNew fails the test unless res, the second request's, printed what
// look prints in a sandbox of its own.
func sameAsNew(t *testing.T, res *sandbox.Result, what string, look ...string) {
	t.Helper()
	fresh := newBackendWith(t, native.Options{PerRequest: true})
	want := reuseRun(t, fresh, nil, look...)
	if string(res.Stdout) != string(want.Stdout) {
		t.Errorf("%s: the second request sees\n%s\nwhere a new sandbox sees\n%s", what, res.Stdout, want.Stdout)
	}
}

// mountsLook prints the mount point, type, source and options of every
// mount the run sees, in order, but not the mounts' ids.
const mountsLook = "while read -r id parent dev root point options rest; do echo \"$point $options ${rest#*- }\"; done < /proc/self/mountinfo"

// moveCounters sends over the loopback interface and to an address with
// no route, over IPv4 and IPv6, and so moves the network namespace's
// counters.
const moveCounters = `import socket
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.sendto(b"x", ("127.0.0.1", 9))
try:
    u.sendto(b"x", ("192.0.2.1", 9))
except OSError:
    pass
u.close()
v = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
v.sendto(b"x", ("::1", 9))
v.close()`

// TestReuseChecksEveryRunsNetwork checks that a kept sandbox compares its
// network namespace with what it was before its first run after every
// run, not only the first: a second run that moves the counters leaves
// the sandbox to no one.
func TestReuseChecksEveryRunsNetwork(t *testing.T) {
	if _, err := os.Stat(python); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	b := newBackend(t)
	defer b.Close()
	reuseRun(t, b, nil, "/bin/true")
	before := native.ReusedRuns(b)
	keptRun(t, b, nil, python, "-c", moveCounters)
	if native.ReusedRuns(b) == before {
		t.Fatal("the second request did not run in the first's sandbox")
	}
	before = native.ReusedRuns(b)
	res := keptRun(t, b, nil, "/bin/sh", "-c", counterLook)
	if native.ReusedRuns(b) != before {
		t.Fatal("the third request ran in the sandbox whose run moved the network counters")
	}
	sameAsNew(t, res, "the network counters", "/bin/sh", "-c", counterLook)
}

// TestReuseDespiteHostOrphans keeps a sandbox while the host holds an
// orphaned TCP socket (one its process closed, with data its peer has not
// read): /proc/net/sockstat's orphan count is the host's, not the
// sandbox's, and a busy server's clients leave such sockets all the time.
func TestReuseDespiteHostOrphans(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close() // never read: what was sent stays unsent
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.SetWriteDeadline(time.Now().Add(500 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for range 64 {
		if _, err := conn.Write(chunk); err != nil {
			break
		}
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	stat, err := os.ReadFile("/proc/net/sockstat")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`orphan [1-9]`).Match(stat) {
		t.Fatalf("the host holds no orphaned socket to test with:\n%s", stat)
	}

	b := newBackend(t)
	defer b.Close()
	reuseRun(t, b, nil, "/bin/true")
	before := native.ReusedRuns(b)
	keptRun(t, b, nil, "/bin/true")
	if native.ReusedRuns(b) == before {
		t.Fatal("a host's orphaned socket ended the kept sandbox")
	}
}

// counterLook prints the network namespace's counters a run may move: the
// loopback interface's, and the IPv4 and IPv6 statistics.
const counterLook = "cat /proc/self/net/dev /proc/self/net/snmp /proc/self/net/snmp6"

// TestPerRequestNeverReuses runs the same program again and again with
// Options.PerRequest: no run is served by another's sandbox.
func TestPerRequestNeverReuses(t *testing.T) {
	b := newBackendWith(t, native.Options{PerRequest: true})
	defer b.Close()
	for range 5 {
		reuseRun(t, b, nil, "/bin/true")
	}
	if n := native.ReusedRuns(b); n != 0 {
		t.Fatalf("%d runs were served by a kept sandbox", n)
	}
	// The same backend without the option keeps them: the count above
	// can tell.
	k := newBackend(t)
	defer k.Close()
	for range 5 {
		keptRun(t, k, nil, "/bin/true")
	}
	if n := native.ReusedRuns(k); n != 4 {
		t.Fatalf("%d of 5 runs were served by a kept sandbox, want 4", n)
	}
}

// TestReuseAfterAFailedRun checks that runs that did not end by
// themselves (a time limit, a memory limit) do not leave their sandbox
// to the next.
func TestReuseAfterAFailedRun(t *testing.T) {
	b := newBackend(t)
	defer b.Close()
	for _, spec := range []*sandbox.Spec{
		{Args: []string{"/bin/sh", "-c", "while :; do :; done"}, Limits: sandbox.Limits{WallTime: 300 * time.Millisecond, CPUTime: 200 * time.Millisecond}},
		{Args: []string{python, "-c", "b = b'x' * (512 << 20)"}, Limits: sandbox.Limits{Memory: 64 << 20, WallTime: 20 * time.Second}},
	} {
		spec.Mounts = native.BaseMounts()
		res, err := b.Run(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status == sandbox.StatusOK {
			t.Fatalf("%v ended ok", spec.Args)
		}
		before := native.ReusedRuns(b)
		reuseRun(t, b, nil, "/bin/true")
		if native.ReusedRuns(b) != before {
			t.Fatalf("the run after %v (%s) was served by its sandbox", spec.Args, res.Status)
		}
	}
}
