package docker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/docker"
)

// requireWarm needs what the warm pool needs: root, for the mounts into
// its containers, beside the engine.
func requireWarm(t *testing.T) {
	t.Helper()
	requireDocker(t)
	testutil.Require(t, os.Geteuid() == 0, "the docker warm pool mounts workspaces: needs root")
}

// waitWarm waits until b has n idle warm containers. Making one takes
// the engine a fraction of a second; a minute means it cannot.
func waitWarm(t *testing.T, b *docker.Backend, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for b.Warm().Idle < n {
		if time.Now().After(deadline) {
			t.Fatalf("warm pool: %+v after a minute, want %d idle", b.Warm(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runWarm runs spec in a warm container: it fails the test when the run
// made a container of its own.
func runWarm(t *testing.T, b *docker.Backend, spec *sandbox.Spec) *sandbox.Result {
	t.Helper()
	if len(spec.Args) == 3 && strings.Contains(spec.Args[2], "\n") {
		// A newline cannot reach a launcher in its request line: the
		// script goes in a file.
		spec.Files = append(spec.Files, sandbox.File{Path: "run.sh", Content: []byte(spec.Args[2])})
		spec.Args = []string{"/bin/sh", "/workspace/run.sh"}
	}
	waitWarm(t, b, 1)
	before := b.Warm().Taken
	res, err := b.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Warm().Taken; got != before+1 {
		t.Fatalf("the run took %d warm containers, want 1", got-before)
	}
	if res.Status != sandbox.StatusOK {
		t.Fatalf("status %s, stderr %q", res.Status, res.Stderr)
	}
	return res
}

func shSpec(script string, env ...string) *sandbox.Spec {
	return &sandbox.Spec{Args: []string{"/bin/sh", "-c", script},
		Env:    append([]string{"PATH=/usr/bin:/bin"}, env...),
		Limits: sandbox.Limits{WallTime: 30 * time.Second}}
}

// leave is what a run leaves for the next, every way one could look:
// files in the workspace, /tmp and /dev/shm, a SysV message
// queue, a process still running, with a secret in its environment, and
// many processes started (process ids).
const leave = `set -e
echo secret >/workspace/secret; echo secret >/tmp/secret; echo secret >/dev/shm/secret
ipcmk -Q >/dev/null
sleep 600 </dev/null >/dev/null 2>&1 &
i=0; while [ $i -lt 60 ]; do /bin/true; i=$((i+1)); done
echo $$`

// look prints what a run can see of earlier ones.
const look = `ls -A /workspace /tmp /dev/shm /dev/mqueue
echo queues $(($(wc -l </proc/sysvipc/msg)-1))
for p in /proc/[0-9]*; do
	[ "$p" = /proc/$$ ] && continue
	echo process "$(tr '\0' ' ' <$p/cmdline 2>/dev/null)"
	tr '\0' '\n' <$p/environ 2>/dev/null | grep SECRET || true
done
echo pid $$`

// TestWarmPool runs programs in warm containers: each run is served by
// one made ahead, the pool is refilled, and no run sees anything the run
// before it left: files, IPC objects, processes, their environment,
// process ids.
func TestWarmPool(t *testing.T) {
	requireWarm(t)
	b := newBackend(t, docker.Options{Warm: 2})
	// The first run of a kind teaches the pool.
	res, err := b.Run(context.Background(), shSpec("true"))
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("first run: %v %+v", err, res)
	}
	waitWarm(t, b, 2)

	spec := shSpec(leave, "SECRET=hunter2")
	spec.Files = []sandbox.File{{Path: "in/data.txt", Content: []byte("given\n")}}
	first := runWarm(t, b, spec)
	firstPID, err := strconv.Atoi(strings.TrimSpace(string(first.Stdout)))
	if err != nil {
		t.Fatalf("first run printed %q", first.Stdout)
	}
	// The pool is refilled to two.
	waitWarm(t, b, 2)

	next := shSpec(look + "\ncat /workspace/in/data.txt")
	next.Files = []sandbox.File{{Path: "in/data.txt", Content: []byte("mine\n")}}
	out := string(runWarm(t, b, next).Stdout)
	for _, bad := range []string{"secret", "sleep 600", "hunter2", "given"} {
		if strings.Contains(out, bad) {
			t.Errorf("the next run sees %q of the first:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "queues 0") {
		t.Errorf("the next run sees SysV message queues:\n%s", out)
	}
	if !strings.Contains(out, "mine") {
		t.Errorf("the next run's file is not in its workspace:\n%s", out)
	}
	var pid int
	if i := strings.LastIndex(out, "pid "); i >= 0 {
		pid, _ = strconv.Atoi(strings.Fields(out[i+4:])[0])
	}
	// The first run started 60 processes after its own: a shared PID
	// namespace would give the next one a higher id.
	if pid <= 0 || pid > firstPID+30 {
		t.Errorf("the next run is process %d, the first was %d and started 60: a PID namespace carried over?\n%s", pid, firstPID, out)
	}
	if err := b.Leftovers(context.Background()); err != nil {
		// Removal is in the background; give it the time the suite does.
		time.Sleep(time.Second)
		if err := b.Leftovers(context.Background()); err != nil {
			t.Error(err)
		}
	}
}

// TestWarmHostWorkspace runs in warm containers with host workspaces (a
// session's, kept between runs): the files and the user carry over, as
// without the pool, and once Run returns nothing of the run is left that
// could write to the workspace, and nothing else holds it mounted.
func TestWarmHostWorkspace(t *testing.T) {
	requireWarm(t)
	b := newBackend(t, docker.Options{Warm: 1})
	ws, err := capws.New(t.TempDir(), "ws-", 16<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Remove() })
	spec := func(script string) *sandbox.Spec {
		s := shSpec(script)
		s.Workspace = ws.Path
		s.Limits.WorkspaceSize = 16 << 20
		return s
	}
	if _, err := b.Run(context.Background(), spec("true")); err != nil {
		t.Fatal(err)
	}
	// A child left running in the workspace, holding it, writing to it.
	runWarm(t, b, spec(`echo one >/workspace/kept
(cd /workspace && while :; do echo x >>late; sleep 0.01; done) </dev/null >/dev/null 2>&1 &
echo started`))
	var st syscall.Stat_t
	if err := syscall.Stat(ws.Path, &st); err != nil {
		t.Fatal(err)
	}
	uid := int(st.Uid)
	if left := processesOf(t, uid); len(left) > 0 {
		t.Fatalf("processes of the run's user %d still there after Run returned: %v", uid, left)
	}
	if n := mountsOf(t, st.Dev); n != 1 {
		t.Errorf("the workspace is mounted %d times once the run ended, want 1 (its own)", n)
	}
	// Nothing writes any more: the file stays as it is.
	before, _ := os.ReadFile(filepath.Join(ws.Path, "late"))
	time.Sleep(100 * time.Millisecond)
	after, _ := os.ReadFile(filepath.Join(ws.Path, "late"))
	if len(after) != len(before) {
		t.Errorf("something of the run still writes to the workspace: %d bytes, then %d", len(before), len(after))
	}
	// The next run of the session: its files, which it may change; its
	// user (fixed when its warm container was made) owns the workspace.
	out := string(runWarm(t, b, spec(`cat /workspace/kept; echo two >>/workspace/kept; rm /workspace/late; id -u`)).Stdout)
	if err := syscall.Stat(ws.Path, &st); err != nil {
		t.Fatal(err)
	}
	if out != fmt.Sprintf("one\n%d\n", st.Uid) {
		t.Errorf("the session's next run printed %q, want its file and the workspace's owner %d", out, st.Uid)
	}
	if data, err := os.ReadFile(filepath.Join(ws.Path, "kept")); err != nil || string(data) != "one\ntwo\n" {
		t.Errorf("the kept file holds %q, %v: the next run could not change it", data, err)
	}
}

// processesOf lists the host's processes of uid.
func processesOf(t *testing.T, uid int) []string {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var found []string
	for _, d := range dirs {
		var st syscall.Stat_t
		if syscall.Stat(d, &st) != nil || int(st.Uid) != uid {
			continue
		}
		cmd, _ := os.ReadFile(d + "/cmdline")
		stat, _ := os.ReadFile(d + "/stat")
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
			continue // a zombie holds no file
		}
		found = append(found, d+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return found
}

// mountsOf counts the host's mounts of the file system dev.
func mountsOf(t *testing.T, dev uint64) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d:%d", unixMajor(dev), unixMinor(dev))
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[2] == want {
			n++
		}
	}
	return n
}

func unixMajor(dev uint64) uint64 { return (dev>>8)&0xfff | (dev>>32)&^0xfff }
func unixMinor(dev uint64) uint64 { return dev&0xff | (dev>>12)&^0xff }

// TestWarmFallsBack runs a program that needs a bind mount the image
// lacks: it gets a container of its own, and runs.
func TestWarmFallsBack(t *testing.T) {
	requireWarm(t)
	b := newBackend(t, docker.Options{Warm: 1})
	if _, err := b.Run(context.Background(), shSpec("true")); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, b, 1)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prog.sh"), []byte("echo from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	taken := b.Warm().Taken
	spec := shSpec("sh /opt/prog.sh")
	spec.Mounts = []sandbox.Mount{{Source: filepath.Join(dir, "prog.sh"), Target: "/opt/prog.sh"}}
	res, err := b.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "from the host\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
	if got := b.Warm().Taken; got != taken {
		t.Errorf("a run with a mount of its own took a warm container")
	}
}

// TestWarmClose checks that Close removes the warm containers, and the
// pool's directory on the host.
func TestWarmClose(t *testing.T) {
	requireWarm(t)
	requireDocker(t)
	b, err := docker.New(docker.Options{Languages: localImages(t), PullPolicy: docker.PullNever, Warm: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Run(context.Background(), shSpec("true")); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, b, 2)
	// And one more being made while it closes.
	runWarm(t, b, shSpec("true"))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=coderunner.pid="+strconv.Itoa(os.Getpid()),
		"--filter", "label=coderunner.warm").CombinedOutput()
	if err != nil {
		t.Fatal(err, string(out))
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("warm containers left after Close: %s", s)
	}
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), "coderunner-docker-pool-"+strconv.Itoa(os.Getpid())+"-*"))
	if len(left) > 0 {
		t.Errorf("pool directories left after Close: %v", left)
	}
}

// TestWarmOptions refuses a pool size out of range, and keeps the
// configuration's bound the backend's.
func TestWarmOptions(t *testing.T) {
	for _, n := range []int{-1, docker.MaxWarm + 1} {
		_, err := docker.New(docker.Options{Warm: n})
		if err == nil || !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "warm") {
			t.Errorf("Warm %d: %v, want an error naming it", n, err)
		}
	}
	if config.MaxDockerWarm != docker.MaxWarm {
		t.Errorf("docker.warm's bound %d, the backend's %d", config.MaxDockerWarm, docker.MaxWarm)
	}
}

// TestWarmExitIsTheProgramsOwn: a warm container runs no prelude, so a
// program that exits as a failed prelude would is judged as any other,
// not turned into a setup error.
func TestWarmExitIsTheProgramsOwn(t *testing.T) {
	requireWarm(t)
	b := newBackend(t, docker.Options{Warm: 1})
	if _, err := b.Run(context.Background(), shSpec("true")); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, b, 1)
	before := b.Warm().Taken
	res, err := b.Run(context.Background(), shSpec("echo 'coderunner-prelude: made up' >&2; exit 120"))
	if err != nil {
		t.Fatalf("a program's own exit became an error: %v", err)
	}
	if b.Warm().Taken != before+1 {
		t.Fatal("the run did not take a warm container")
	}
	if res.ExitCode != 120 || res.Status == sandbox.StatusOK {
		t.Errorf("exit %d status %s, want the program's exit 120", res.ExitCode, res.Status)
	}
}

// TestWarmSweepsDeadPools: a process killed with its pool left the
// pool's tmpfs mounted, a workspace still mounted in it; a new backend
// removes both (its containers are the janitor's, by their labels).
func TestWarmSweepsDeadPools(t *testing.T) {
	requireWarm(t)
	parent := t.TempDir()
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(parent, "coderunner-docker-pool-"+strconv.Itoa(dead.Process.Pid)+"-x")
	if err := os.Mkdir(old, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := capws.Mount(old, 1<<20, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(old, "c1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := capws.Mount(filepath.Join(old, "c1"), 1<<20, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = (&capws.Dir{Path: old}).Remove() })
	b := newBackend(t, docker.Options{Warm: 1, TempDir: parent})
	if _, err := os.Lstat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead process's pool is still there: %v", err)
	}
	// This backend's own pool is in parent, and runs.
	if _, err := b.Run(context.Background(), shSpec("true")); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, b, 1)
	runWarm(t, b, shSpec("true"))
	mine, _ := filepath.Glob(filepath.Join(parent, "coderunner-docker-pool-"+strconv.Itoa(os.Getpid())+"-*"))
	if len(mine) != 1 {
		t.Errorf("pools of this process in %s: %v, want one", parent, mine)
	}
}

// TestWarmContainerGone: the idle warm containers were removed behind
// the backend's back (an engine restarted, an operator's docker rm): a
// run gets a container of its own instead, and the pool is made again.
// A launcher's end is seen when the run takes its container; an exec
// fails once tried, and the pool is emptied.
func TestWarmContainerGone(t *testing.T) {
	for _, execPath := range []bool{false, true} {
		t.Run(map[bool]string{false: "launcher", true: "exec"}[execPath], func(t *testing.T) {
			warmContainerGone(t, execPath)
		})
	}
}

func warmContainerGone(t *testing.T, execPath bool) {
	requireWarm(t)
	b := newBackend(t, docker.Options{Warm: 2, WarmExec: execPath})
	ws, err := capws.New(t.TempDir(), "ws-", 16<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Remove() })
	spec := shSpec("cat /workspace/in; echo out >/workspace/out")
	spec.Workspace, spec.Limits.WorkspaceSize = ws.Path, 16<<20
	spec.Files = []sandbox.File{{Path: "in", Content: []byte("in\n")}}
	if _, err := b.Run(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, b, 2)
	out, err := exec.Command("docker", "ps", "-q", "--filter", "label=coderunner.pid="+strconv.Itoa(os.Getpid()),
		"--filter", "label=coderunner.warm").Output()
	if err != nil {
		t.Fatal(err)
	}
	ids := strings.Fields(string(out))
	if len(ids) < 2 {
		t.Fatalf("warm containers %q, want 2", ids)
	}
	if out, err := exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	taken := b.Warm().Taken
	res, err := b.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("a run that took a removed warm container: %v", err)
	}
	if want := taken + map[bool]int64{false: 0, true: 1}[execPath]; b.Warm().Taken != want {
		t.Fatalf("the run took %d warm containers, want %d", b.Warm().Taken-taken, want-taken)
	}
	if string(res.Stdout) != "in\n" || res.Status != sandbox.StatusOK {
		t.Errorf("status %s stdout %q stderr %q", res.Status, res.Stdout, res.Stderr)
	}
	if data, err := os.ReadFile(filepath.Join(ws.Path, "out")); err != nil || string(data) != "out\n" {
		t.Errorf("the workspace holds %q, %v", data, err)
	}
	if n := mountsOf(t, statDev(t, ws.Path)); n != 1 {
		t.Errorf("the workspace is mounted %d times once the run ended, want 1", n)
	}
	waitWarm(t, b, 2)
	runWarm(t, b, shSpec("true"))
}

func statDev(t *testing.T, p string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Dev
}
