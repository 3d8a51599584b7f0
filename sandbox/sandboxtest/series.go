package sandboxtest

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// runSeries runs the series tests of a backend that keeps sandboxes
// between runs (sandbox.Reuser): whatever a run leaves, the next run of
// the series must not see it. Every test checks first that the second
// run did reuse the first one's sandbox (the backend names the sandbox
// it keeps, Env.Kept), so that it cannot pass by never reusing.
func (s *suite) runSeries(t *testing.T, reuser sandbox.Reuser) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, sandbox.Reuser)
	}{
		{"LeftoversInvisible", s.testSeriesLeftovers},
		{"ProcessesKilled", s.testSeriesProcesses},
		{"IPCObjectsGone", s.testSeriesIPC},
		{"PIDCounterFresh", s.testSeriesPIDCounter},
		{"IPCMemoryFreed", s.testSeriesIPCMemory},
		{"UsagePerRun", s.testSeriesUsage},
		{"StreamsPerRun", s.testSeriesStreams},
		{"AfterLimits", s.testSeriesAfterLimits},
		{"Concurrent", s.testSeriesConcurrent},
		{"TmpFilesPerRun", s.testSeriesTmpFiles},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, reuser)
			if s.Leftovers != nil {
				if err := waitClean(t, s.Leftovers); err != nil {
					t.Errorf("left behind: %v", err)
				}
			}
		})
	}
}

// seriesRun runs spec in ser and returns the result, with the name of
// the sandbox ser keeps after it ("" when it keeps none), and takes off
// stdout the process id of the shell, which it prints first.
func (s *suite) seriesRun(t *testing.T, ser sandbox.Series, spec *sandbox.Spec) (*sandbox.Result, string) {
	t.Helper()
	res, err := ser.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("run %q: %v", spec.Args, err)
	}
	first, rest, _ := bytes.Cut(res.Stdout, []byte("\n"))
	if _, err := strconv.Atoi(strings.TrimPrefix(string(first), "pid ")); err != nil {
		t.Fatalf("no process id first on stdout: %q (status %s, stderr %.500s)", res.Stdout, res.Status, res.Stderr)
	}
	res.Stdout = rest
	if s.Kept == nil {
		t.Fatal("the backend keeps sandboxes, but Env.Kept does not name them")
	}
	kept := s.Kept(ser)
	if len(kept) > 1 {
		t.Fatalf("the series keeps %d sandboxes after one run at a time: %q", len(kept), kept)
	}
	if len(kept) == 0 {
		return res, ""
	}
	return res, kept[0]
}

// seriesSh is a shell script that prints its process id first.
func (s *suite) seriesSh(script string) *sandbox.Spec {
	return s.sh("echo pid $$\n" + script)
}

// reused checks that the second run ran in the sandbox the first was
// kept in: first and second name the sandbox kept after each.
func reused(t *testing.T, first, second string) {
	t.Helper()
	if first == "" || second != first {
		t.Fatalf("the sandbox kept after the first run is %q, after the second %q: the sandbox was not reused", first, second)
	}
}

func (s *suite) testSeriesLeftovers(t *testing.T, reuser sandbox.Reuser) {
	const check = `ls -A /tmp /workspace /dev/shm/; stat -c '%a %u' /tmp /workspace; ` +
		`PY -c 'import os; print(os.listxattr("/workspace"), os.listxattr("/tmp"))'`
	for _, tc := range []struct{ name, leave string }{
		{"a few files", `echo secret > /tmp/left; echo secret > /workspace/left; echo secret > /dev/shm/left`},
		{"links and a fifo", `ln -s / /workspace/root; ln -s /proc/1/root /tmp/init; mkfifo /tmp/fifo; ln /workspace/root /workspace/hard 2>/dev/null; true`},
		{"a directory tree", `mkdir -p /workspace/a/b/c /tmp/x/y; echo s > /workspace/a/b/c/f; echo s > /tmp/x/y/f; chmod 0 /workspace/a/b`},
		{"too many files to remove", `i=0; while [ $i -lt 600 ]; do : > /tmp/f$i; i=$((i+1)); done`},
		{"too deep to remove", `d=/workspace; i=0; while [ $i -lt 20 ]; do d=$d/d; mkdir $d; i=$((i+1)); done; echo s > $d/f`},
		{"the workspace's mode", `chmod 0700 /workspace`},
		{"the workspace locked", `echo s > /workspace/f; chmod 0 /workspace`},
		{"an extended attribute", `PY -c 'import os; os.setxattr("/workspace", "user.left", b"secret"); os.setxattr("/tmp", "user.left", b"secret")' 2>/dev/null; true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ser := reuser.Series()
			defer ser.Close()
			// The first run shows what a clean sandbox looks like.
			clean, pid0 := s.seriesRun(t, ser, s.seriesSh(strings.ReplaceAll(check, "PY", s.Python)))
			expect(t, clean, sandbox.StatusOK)
			left, pid1 := s.seriesRun(t, ser, s.seriesSh(strings.ReplaceAll(tc.leave, "PY", s.Python)))
			expect(t, left, sandbox.StatusOK)
			reused(t, pid0, pid1)
			after, pid2 := s.seriesRun(t, ser, s.seriesSh(strings.ReplaceAll(check, "PY", s.Python)))
			expect(t, after, sandbox.StatusOK)
			reused(t, pid1, pid2)
			if !bytes.Equal(after.Stdout, clean.Stdout) || len(after.Stderr) > 0 {
				t.Fatalf("after a run that left %s the next run sees\n%s%s\nwhere a clean sandbox shows\n%s", tc.name, after.Stdout, after.Stderr, clean.Stdout)
			}
		})
	}
}

func (s *suite) testSeriesProcesses(t *testing.T, reuser sandbox.Reuser) {
	ser := reuser.Series()
	defer ser.Close()
	// Children that outlive the program every way they can: in the
	// background, double-forked into a new session, ignoring signals, and
	// stopped.
	res, pid0 := s.seriesRun(t, ser, s.seriesSh(`
sleep 1000 &
(setsid sh -c 'trap "" TERM HUP INT; sleep 1000' &)
sh -c 'kill -STOP $$' &
echo started`))
	expect(t, res, sandbox.StatusOK)
	res, pid1 := s.seriesRun(t, ser, s.seriesSh(`cd /proc && for p in [0-9]*; do [ -d $p ] && echo $p; done; echo $$`))
	expect(t, res, sandbox.StatusOK)
	reused(t, pid0, pid1)
	// The init (1) and the shell are the only processes; the loop runs
	// in the shell itself, which prints its own process id last.
	procs := strings.Fields(string(res.Stdout))
	if len(procs) == 0 {
		t.Fatalf("no process listed: stderr %q", res.Stderr)
	}
	self := procs[len(procs)-1]
	for _, p := range procs[:len(procs)-1] {
		if p != "1" && p != self {
			t.Fatalf("process %s of an earlier run is alive: /proc lists %q", p, res.Stdout)
		}
	}
}

func (s *suite) testSeriesIPC(t *testing.T, reuser sandbox.Reuser) {
	ser := reuser.Series()
	defer ser.Close()
	const ipc = `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
rt = ctypes.CDLL("librt.so.1", use_errno=True)
IPC_CREAT = 0o1000
create = os.environ.get("CREATE") == "1"
flags = IPC_CREAT | 0o600 if create else 0
shm = libc.shmget(0x5eed, 4096, flags)
sem = libc.semget(0x5eed, 1, flags)
msg = libc.msgget(0x5eed, flags)
attr = (ctypes.c_long * 8)(0, 1, 64, 0)  # a small queue: message queue bytes are capped
mq = rt.mq_open(b"/seed", (os.O_CREAT | os.O_RDWR) if create else os.O_RDWR, 0o600, attr if create else None)
print("shm", shm >= 0, "sem", sem >= 0, "msg", msg >= 0, "mq", mq >= 0)
`
	spec := func(create string) *sandbox.Spec {
		sp := s.seriesSh(s.Python + ` -c '` + ipc + `'`)
		sp.Env = append(sp.Env, "CREATE="+create)
		return sp
	}
	res, pid0 := s.seriesRun(t, ser, spec("1"))
	expect(t, res, sandbox.StatusOK)
	if got := strings.TrimSpace(string(res.Stdout)); got != "shm True sem True msg True mq True" {
		t.Fatalf("creating IPC objects: %s %s", res.Stdout, res.Stderr)
	}
	res, pid1 := s.seriesRun(t, ser, spec("0"))
	expect(t, res, sandbox.StatusOK)
	reused(t, pid0, pid1)
	if got := strings.TrimSpace(string(res.Stdout)); got != "shm False sem False msg False mq False" {
		t.Fatalf("IPC objects of an earlier run are visible: %s %s", res.Stdout, res.Stderr)
	}
}

func (s *suite) testSeriesUsage(t *testing.T, reuser sandbox.Reuser) {
	ser := reuser.Series()
	defer ser.Close()
	heavy := s.seriesSh(s.Python + ` -c '
import time
b = bytearray(96 << 20)
end = time.process_time() + 0.3
while time.process_time() < end:
    pass
'`)
	heavy.Limits.Memory = 256 * sandbox.MiB
	res, pid0 := s.seriesRun(t, ser, heavy)
	expect(t, res, sandbox.StatusOK)
	if res.PeakMemory < 96*sandbox.MiB || res.CPUTime < 300*time.Millisecond {
		t.Fatalf("the heavy run measured %d bytes and %v, want at least 96 MiB and 300 ms", res.PeakMemory, res.CPUTime)
	}
	light := s.seriesSh("true")
	light.Limits.Memory = 256 * sandbox.MiB
	res, pid1 := s.seriesRun(t, ser, light)
	expect(t, res, sandbox.StatusOK)
	reused(t, pid0, pid1)
	if res.PeakMemory >= 48*sandbox.MiB || res.CPUTime >= 200*time.Millisecond {
		t.Fatalf("a trivial run after a heavy one measured %d bytes and %v: the heavy run's usage was counted again", res.PeakMemory, res.CPUTime)
	}
}

func (s *suite) testSeriesStreams(t *testing.T, reuser sandbox.Reuser) {
	ser := reuser.Series()
	defer ser.Close()
	prev := ""
	for i := range 4 {
		spec := s.seriesSh(`cat; echo "err $0" >&2`)
		spec.Args = append(spec.Args, fmt.Sprint("run", i))
		if i%2 == 0 {
			spec.Stdin = strings.NewReader(fmt.Sprintf("input %d\n", i))
		}
		var stdout bytes.Buffer
		spec.Stdout = &stdout
		res, pid := s.seriesRun(t, ser, spec)
		expect(t, res, sandbox.StatusOK)
		if i > 0 {
			reused(t, prev, pid)
		}
		prev = pid
		want := ""
		if i%2 == 0 {
			want = fmt.Sprintf("input %d\n", i)
		}
		if string(res.Stdout) != want || string(res.Stderr) != fmt.Sprintf("err run%d\n", i) {
			t.Fatalf("run %d: stdout %q stderr %q, want %q and its own stderr", i, res.Stdout, res.Stderr, want)
		}
		if !bytes.HasSuffix(stdout.Bytes(), []byte(want)) {
			t.Fatalf("run %d streamed %q to its own writer, want its output", i, stdout.Bytes())
		}
	}
}

func (s *suite) testSeriesAfterLimits(t *testing.T, reuser sandbox.Reuser) {
	ser := reuser.Series()
	defer ser.Close()
	wall := s.seriesSh("sleep 60")
	wall.Limits.WallTime = 300 * time.Millisecond
	res, _ := s.seriesRun(t, ser, wall)
	expect(t, res, sandbox.StatusTimeLimit)
	mem := s.seriesSh("exec " + s.Python + ` -c 'b = bytearray(512 << 20)'`)
	mem.Limits.Memory = 64 * sandbox.MiB
	res, _ = s.seriesRun(t, ser, mem)
	expect(t, res, sandbox.StatusMemoryLimit)
	out := s.seriesSh("yes")
	out.Limits.OutputBytes = 4096
	res, _ = s.seriesRun(t, ser, out)
	expect(t, res, sandbox.StatusOutputLimit)
	res, _ = s.seriesRun(t, ser, s.seriesSh("echo fine"))
	expect(t, res, sandbox.StatusOK)
	if string(res.Stdout) != "fine\n" {
		t.Fatalf("a run after runs that hit limits: stdout %q", res.Stdout)
	}
}

func (s *suite) testSeriesConcurrent(t *testing.T, reuser sandbox.Reuser) {
	ser := reuser.Series()
	defer ser.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 3 {
		wg.Go(func() {
			for i := range 5 {
				want := fmt.Sprintf("worker %d run %d", w, i)
				spec := s.seriesSh(`cat; ls -A /tmp; echo x > /tmp/mine`)
				spec.Stdin = strings.NewReader(want + "\n")
				res, err := ser.Run(context.Background(), spec)
				if err != nil {
					errs <- err
					return
				}
				_, out, _ := bytes.Cut(res.Stdout, []byte("\n"))
				if res.Status != sandbox.StatusOK || string(out) != want+"\n" {
					errs <- fmt.Errorf("%s: status %s stdout %q stderr %q", want, res.Status, out, res.Stderr)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// testSeriesPIDCounter attacks the process ids: a run that forks as many
// times as its hidden input says would tell the next run its input, if
// the next run's processes took the ids that follow (a kept PID
// namespace).
func (s *suite) testSeriesPIDCounter(t *testing.T, reuser sandbox.Reuser) {
	ser := reuser.Series()
	defer ser.Close()
	const probe = `sh -c 'echo child $$'`
	clean, id0 := s.seriesRun(t, ser, s.seriesSh(probe))
	expect(t, clean, sandbox.StatusOK)
	forks, id1 := s.seriesRun(t, ser, s.seriesSh(`i=0; while [ $i -lt 123 ]; do /bin/true; i=$((i+1)); done; echo forked`))
	expect(t, forks, sandbox.StatusOK)
	reused(t, id0, id1)
	after, id2 := s.seriesRun(t, ser, s.seriesSh(probe))
	expect(t, after, sandbox.StatusOK)
	reused(t, id1, id2)
	if string(after.Stdout) != string(clean.Stdout) {
		t.Fatalf("after a run that forked 123 times the next run's child says %q, in a clean sandbox %q: the process ids tell what an earlier run did",
			after.Stdout, clean.Stdout)
	}
}

// testSeriesIPCMemory leaves a large SysV shared memory segment behind:
// if it outlived its run it would stay charged to the sandbox, and the
// next run, under the same memory limit, would run out of memory.
func (s *suite) testSeriesIPCMemory(t *testing.T, reuser sandbox.Reuser) {
	ser := reuser.Series()
	defer ser.Close()
	const leave = `
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
size = 150 << 20
shm = libc.shmget(0x5eed, size, 0o1000 | 0o600)
assert shm >= 0, ctypes.get_errno()
addr = libc.shmat(shm, None, 0)
assert addr not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
ctypes.memset(addr, 1, size)
libc.shmdt(ctypes.c_void_p(addr))
print("left")
`
	spec := s.seriesSh(s.Python + ` -c '` + leave + `'`)
	spec.Limits.Memory = 256 * sandbox.MiB
	res, id0 := s.seriesRun(t, ser, spec)
	expect(t, res, sandbox.StatusOK)
	if string(res.Stdout) != "left\n" {
		t.Fatalf("leaving a segment: stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	alloc := s.seriesSh(s.Python + ` -c 'b = bytearray(150 << 20); print("allocated")'`)
	alloc.Limits.Memory = 256 * sandbox.MiB
	for i := range 3 {
		res, id1 := s.seriesRun(t, ser, alloc)
		if res.Status != sandbox.StatusOK || string(res.Stdout) != "allocated\n" {
			t.Fatalf("run %d after a run that left a 150 MiB segment, under a 256 MiB limit: status %s stdout %q stderr %.300q",
				i+1, res.Status, res.Stdout, res.Stderr)
		}
		reused(t, id0, id1)
	}
}
