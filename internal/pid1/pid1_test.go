package pid1_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/pid1"
)

// The test binary plays every part: the init (pid1.Run over the binary
// again), its command, and the processes the command leaves behind. The
// part is named by roleEnv.
const roleEnv = "PID1_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "":
		os.Exit(m.Run())
	case "init":
		os.Exit(initRole())
	case "exit":
		code, _ := strconv.Atoi(os.Getenv("PID1_TEST_CODE"))
		os.Exit(code)
	case "kill":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "signals":
		os.Exit(signalsRole())
	case "orphans":
		os.Exit(orphansRole())
	case "middle":
		os.Exit(middleRole())
	case "grandchild":
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "unknown role %q\n", os.Getenv(roleEnv))
	os.Exit(3)
}

// initRole runs the init over the role in PID1_TEST_CHILD (or the
// executable in PID1_TEST_PATH).
func initRole() int {
	path := os.Getenv("PID1_TEST_PATH")
	if path == "" {
		path = os.Args[0]
	}
	env := withRole(os.Getenv("PID1_TEST_CHILD"))
	status, err := pid1.Run(pid1.Command{
		Path: path, Args: []string{path}, Env: env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
	}
	return status
}

// signalsRole says "ready", then names the first forwarded signal it gets
// and exits as a shell reports a death by it.
func signalsRole() int {
	c := make(chan os.Signal, 1)
	signal.Notify(c, pid1.Forwarded...)
	fmt.Println("ready")
	s := (<-c).(syscall.Signal)
	fmt.Println("got", s.String())
	return 128 + int(s)
}

// orphansRole starts a process that starts a grandchild and exits at once,
// so the grandchild is an orphan the init inherits; it prints the
// grandchild's pid and waits for its stdin to close.
func orphansRole() int {
	cmd := exec.Command(os.Args[0])
	cmd.Env = withRole("middle")
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "middle:", err)
		return 1
	}
	fmt.Print(string(out))
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

func middleRole() int {
	cmd := exec.Command(os.Args[0])
	cmd.Env = withRole("grandchild")
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "grandchild:", err)
		return 1
	}
	fmt.Println(cmd.Process.Pid)
	return 0 // without waiting: the grandchild is left behind
}

// withRole is this process's environment with the role set to role (the
// first of two settings of a variable is the one a Go program reads).
func withRole(role string) []string {
	env := []string{roleEnv + "=" + role}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, roleEnv+"=") {
			env = append(env, kv)
		}
	}
	return env
}

// startInit runs the init over the child role as a process of its own, so
// that neither its subreaper setting nor its signal handling touches the
// test process.
func startInit(t *testing.T, child string, env ...string) (*exec.Cmd, *bufio.Reader, *os.File) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(withRole("init"), append([]string{"PID1_TEST_CHILD=" + child}, env...)...)
	stdin, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = stdin
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = stdin.Close()
	t.Cleanup(func() {
		_ = w.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, bufio.NewReader(out), w
}

func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("the init itself was killed by %v", ws.Signal())
		}
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

func TestExitStatusCarries(t *testing.T) {
	for _, code := range []string{"0", "3", "143"} {
		t.Run(code, func(t *testing.T) {
			cmd, _, _ := startInit(t, "exit", "PID1_TEST_CODE="+code)
			if got := strconv.Itoa(exitCode(t, cmd)); got != code {
				t.Fatalf("exit status %s, want the command's %s", got, code)
			}
		})
	}
}

func TestKilledCommandIs128PlusSignal(t *testing.T) {
	cmd, _, _ := startInit(t, "kill")
	if got := exitCode(t, cmd); got != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit status %d, want 137", got)
	}
}

func TestSignalsAreForwarded(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, out, _ := startInit(t, "signals")
			if line, err := out.ReadString('\n'); line != "ready\n" {
				t.Fatalf("command said %q (%v), want ready", line, err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			line, _ := out.ReadString('\n')
			if want := "got " + sig.String() + "\n"; line != want {
				t.Fatalf("command said %q, want %q", line, want)
			}
			if got := exitCode(t, cmd); got != 128+int(sig) {
				t.Fatalf("exit status %d, want %d", got, 128+int(sig))
			}
		})
	}
}

func TestOrphansAreReaped(t *testing.T) {
	cmd, out, stdin := startInit(t, "orphans")
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("no grandchild pid: %q, %v", line, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	// The grandchild exits at once; an init that does not reap leaves it a
	// zombie for as long as the init lives, which it still does here.
	state := ""
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if state = procState(pid); state == "" {
			break
		}
	}
	if state != "" {
		t.Fatalf("the orphan %d is still there in state %s while the init runs", pid, state)
	}
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	if got := exitCode(t, cmd); got != 0 {
		t.Fatalf("exit status %d, want 0", got)
	}
}

// procState is the state letter of pid, or "" when there is no such
// process (it was reaped).
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return "?"
}

func TestMissingCommand(t *testing.T) {
	cmd, _, _ := startInit(t, "exit", "PID1_TEST_PATH=/nonexistent/command")
	if got := exitCode(t, cmd); got != pid1.ExitNotFound {
		t.Fatalf("exit status %d, want %d", got, pid1.ExitNotFound)
	}
}

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		ws   syscall.WaitStatus
		want int
	}{
		{0, 0},
		{7 << 8, 7},
		{syscall.WaitStatus(syscall.SIGTERM), 143},
		{syscall.WaitStatus(syscall.SIGKILL) | 0x80, 137}, // with a core dump
	} {
		if got := pid1.ExitStatus(tc.ws); got != tc.want {
			t.Errorf("ExitStatus(%#x) = %d, want %d", int(tc.ws), got, tc.want)
		}
	}
}

func TestReadOnlyCgroups(t *testing.T) {
	const mountinfo = `600 500 0:50 / / ro,relatime - overlay overlay rw
610 600 0:46 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,mode=755
611 610 0:29 / /sys/fs/cgroup/cpu ro,nosuid,nodev,noexec,relatime - cgroup cgroup rw,cpu
612 610 0:31 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,memory
613 600 0:32 / /mnt/cgroup ro,nosuid - cgroup2 cgroup2 rw
614 610 0:33 / /sys/fs/cgroup/unified ro,nosuid,nodev - cgroup2 cgroup2 rw
615 600 0:34 / /sys/fs/cgroupx ro - cgroup cgroup rw,pids
`
	got := pid1.ReadOnlyCgroups(mountinfo)
	want := []pid1.Mount{
		{Point: "/sys/fs/cgroup/cpu", Flags: unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_RELATIME},
		{Point: "/sys/fs/cgroup/unified", Flags: unix.MS_NOSUID | unix.MS_NODEV},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ReadOnlyCgroups = %+v, want %+v (only read-only cgroup mounts under /sys/fs/cgroup)", got, want)
	}
}
