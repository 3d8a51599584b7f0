package seccomp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/coderunner/coderunner/internal/testutil"
	"golang.org/x/sys/unix"
)

// childEnv makes the test binary act as a child that installs the filter
// and probes the kernel, instead of running tests. Its value is the mode.
const childEnv = "CODERUNNER_SECCOMP_TEST_CHILD"

// A path that does not exist, so that mount(2) fails with ENOENT rather
// than mounting anything if the filter let it through.
const missingMountpoint = "/nonexistent/coderunner-seccomp-test"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode == attachMode {
		os.Exit(runAttachChild())
	} else if mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// childReport is what a child prints on stdout.
type childReport struct {
	// Errnos maps each probe to the errno it got, 0 for success.
	Errnos map[string]int
	// Threads and Filtered count the process's threads and those in
	// seccomp filter mode, to show that Install reaches every thread.
	Threads, Filtered int
}

func runChild(mode string) int {
	// A child killed by the filter must not leave a core file behind.
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})

	prog, err := Program()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	switch mode {
	case "install", "x32":
		if err := Install(prog); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	case "marshal":
		// Install from the marshalled bytes the way the native backend's C
		// init does: no TSYNC, so the probes must stay on this thread.
		runtime.LockOSThread()
		if err := installRaw(Marshal(prog)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	default:
		fmt.Fprintf(os.Stderr, "unknown mode %q\n", mode)
		return 2
	}

	if mode == "x32" {
		// getpid through the x32 ABI: the filter must kill the process.
		unix.Syscall(x32SyscallBit|unix.SYS_GETPID, 0, 0, 0)
		fmt.Fprintln(os.Stderr, "x32 system call returned")
		return 3
	}

	report := childReport{Errnos: probe()}
	report.Threads, report.Filtered = seccompThreads()
	if err := json.NewEncoder(os.Stdout).Encode(report); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

func installRaw(b []byte) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	fprog := struct {
		len    uint16
		filter unsafe.Pointer
	}{uint16(len(b) / 8), unsafe.Pointer(&b[0])}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return errno
	}
	return nil
}

func errnoOf(err error) int {
	if err == nil {
		return 0
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return int(e)
	}
	return -1
}

func rawErr(_, _ uintptr, errno unix.Errno) error {
	if errno != 0 {
		return errno
	}
	return nil
}

// probe tries each call. Arguments are chosen so that, if the filter let a
// call through, the kernel would answer with another error than EPERM (or
// succeed harmlessly), whatever the privileges of the test.
func probe() map[string]int {
	// Fixed in the child, since after the filter the parent's test binary
	// re-exec must not become another child.
	self, _ := os.Executable()
	env := slicesWithout(os.Environ(), childEnv+"=")
	spawn := func(flags uintptr) error {
		cmd := exec.Command(self, "-test.run=^$")
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags}
		return cmd.Run()
	}
	devnull, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	openErr := err
	var c byte = 'x'

	probes := []struct {
		name string
		call func() error
	}{
		{"getpid", func() error { return rawErr(unix.Syscall(unix.SYS_GETPID, 0, 0, 0)) }},
		{"open(/dev/null)", func() error { return openErr }},
		{"exec", func() error { return spawn(0) }},
		{"unshare(CLONE_NEWUSER)", func() error { return unix.Unshare(unix.CLONE_NEWUSER) }},
		{"unshare(CLONE_NEWNS)", func() error { return unix.Unshare(unix.CLONE_NEWNS) }},
		{"exec(CLONE_NEWUSER)", func() error { return spawn(unix.CLONE_NEWUSER) }},
		// Go asks for a time namespace through clone3.
		{"exec(CLONE_NEWTIME)", func() error { return spawn(unix.CLONE_NEWTIME) }},
		{"clone3", func() error { return rawErr(unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)) }},
		{"mount", func() error { return unix.Mount("none", missingMountpoint, "tmpfs", 0, "") }},
		{"io_uring_setup", func() error { return rawErr(unix.Syscall(unix.SYS_IO_URING_SETUP, 1, 0, 0)) }},
		{"keyctl", func() error {
			return rawErr(unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, ^uintptr(12344), 0))
		}},
		{"bpf", func() error { return rawErr(unix.Syscall(unix.SYS_BPF, ^uintptr(0), 0, 0)) }},
		{"ioctl(TIOCSTI)", func() error {
			return rawErr(unix.Syscall(unix.SYS_IOCTL, uintptr(devnull), unix.TIOCSTI, uintptr(unsafe.Pointer(&c))))
		}},
		{"ioctl(TCGETS)", func() error {
			_, err := unix.IoctlGetTermios(devnull, unix.TCGETS)
			return err
		}},
		{"socket(AF_UNIX)", func() error { return socketProbe(unix.AF_UNIX, unix.SOCK_STREAM, 0) }},
		{"socket(AF_INET)", func() error { return socketProbe(unix.AF_INET, unix.SOCK_DGRAM, 0) }},
		{"socket(AF_INET6)", func() error { return socketProbe(unix.AF_INET6, unix.SOCK_STREAM, 0) }},
		{"socketpair(AF_UNIX)", func() error {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err == nil {
				unix.Close(fds[0])
				unix.Close(fds[1])
			}
			return err
		}},
		// Both work for anyone on this kernel without the filter.
		{"socket(AF_NETLINK)", func() error { return socketProbe(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE) }},
		{"socket(AF_VSOCK)", func() error { return socketProbe(unix.AF_VSOCK, unix.SOCK_STREAM, 0) }},
		{"socket(1<<32|AF_NETLINK)", func() error {
			return rawErr(unix.Syscall(unix.SYS_SOCKET, 1<<32|unix.AF_NETLINK, unix.SOCK_RAW, 0))
		}},
		{"socketpair(AF_NETLINK)", func() error {
			_, err := unix.Socketpair(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
			return err
		}},
		// A harmless context if it were let through; the process exits soon.
		{"io_setup", func() error {
			var ctx uint64
			return rawErr(unix.Syscall(unix.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&ctx)), 0))
		}},
		{"set_mempolicy(MPOL_DEFAULT)", func() error { return rawErr(unix.Syscall(unix.SYS_SET_MEMPOLICY, 0, 0, 0)) }},
		{"personality(query)", func() error {
			return rawErr(unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0))
		}},
		{"personality(READ_IMPLIES_EXEC)", func() error {
			return rawErr(unix.Syscall(unix.SYS_PERSONALITY, 0x0400000, 0, 0))
		}},
		// Last: had it succeeded, the child would stop at its next signal.
		{"ptrace(PTRACE_TRACEME)", func() error {
			return rawErr(unix.Syscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0))
		}},
	}
	got := make(map[string]int, len(probes))
	for _, p := range probes {
		got[p.name] = errnoOf(p.call())
	}
	return got
}

// socketProbe creates a socket with the raw system call, closing it if it
// was created.
func socketProbe(family, typ, proto int) error {
	fd, _, errno := unix.Syscall(unix.SYS_SOCKET, uintptr(family), uintptr(typ|unix.SOCK_CLOEXEC), uintptr(proto))
	if errno != 0 {
		return errno
	}
	unix.Close(int(fd))
	return nil
}

func slicesWithout(env []string, prefix string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, prefix) {
			out = append(out, kv)
		}
	}
	return out
}

// seccompThreads counts the process's threads and those whose status says
// "Seccomp: 2" (SECCOMP_MODE_FILTER).
func seccompThreads() (threads, filtered int) {
	paths, _ := filepath.Glob("/proc/self/task/*/status")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		threads++
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "Seccomp:" && f[1] == "2" {
				filtered++
				break
			}
		}
	}
	return threads, filtered
}

func requireSeccomp(t testing.TB) {
	t.Helper()
	_, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	testutil.Require(t, err == nil, fmt.Sprintf("kernel has no seccomp support: %v", err))
	_, err = Program()
	testutil.Require(t, err == nil, fmt.Sprintf("no filter for %s", runtime.GOARCH))
}

// startChild runs the test binary as a child in mode. The deadline only
// guards against a child stopped by a filter that let ptrace through.
func startChild(t *testing.T, mode string) (*exec.Cmd, []byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	cmd.Dir = t.TempDir()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if stderr.Len() > 0 {
		t.Logf("child stderr: %s", stderr.String())
	}
	return cmd, out, err
}

func TestKernelEnforcesPolicy(t *testing.T) {
	requireSeccomp(t)
	want := map[string]unix.Errno{
		"getpid":                         0,
		"open(/dev/null)":                0,
		"exec":                           0,
		"unshare(CLONE_NEWUSER)":         unix.EPERM,
		"unshare(CLONE_NEWNS)":           unix.EPERM,
		"exec(CLONE_NEWUSER)":            unix.EPERM,
		"exec(CLONE_NEWTIME)":            unix.ENOSYS,
		"clone3":                         unix.ENOSYS,
		"mount":                          unix.EPERM,
		"io_uring_setup":                 unix.EPERM,
		"keyctl":                         unix.EPERM,
		"bpf":                            unix.EPERM,
		"ioctl(TIOCSTI)":                 unix.EPERM,
		"ioctl(TCGETS)":                  unix.ENOTTY, // reached the kernel: /dev/null is no terminal
		"socket(AF_UNIX)":                0,
		"socket(AF_INET)":                0,
		"socket(AF_INET6)":               0,
		"socketpair(AF_UNIX)":            0,
		"socket(AF_NETLINK)":             unix.EAFNOSUPPORT,
		"socket(AF_VSOCK)":               unix.EAFNOSUPPORT,
		"socket(1<<32|AF_NETLINK)":       unix.EAFNOSUPPORT,
		"socketpair(AF_NETLINK)":         unix.EAFNOSUPPORT,
		"io_setup":                       unix.EPERM,
		"set_mempolicy(MPOL_DEFAULT)":    unix.EPERM,
		"personality(query)":             0,
		"personality(READ_IMPLIES_EXEC)": unix.EPERM,
		"ptrace(PTRACE_TRACEME)":         unix.EPERM,
	}
	for _, mode := range []string{"install", "marshal"} {
		t.Run(mode, func(t *testing.T) {
			_, out, err := startChild(t, mode)
			if err != nil {
				t.Fatalf("child failed: %v", err)
			}
			var r childReport
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("child output %q: %v", out, err)
			}
			for name, w := range want {
				got, ok := r.Errnos[name]
				if !ok {
					t.Errorf("%s: not probed", name)
					continue
				}
				if unix.Errno(got) != w {
					t.Errorf("%s: got errno %d (%v), want %d (%v)", name, got, unix.Errno(got), int(w), w)
				}
			}
			if len(r.Errnos) != len(want) {
				t.Errorf("child ran %d probes, test expects %d", len(r.Errnos), len(want))
			}
			if r.Filtered == 0 {
				t.Errorf("no thread reports seccomp filter mode")
			}
			if mode == "install" && r.Filtered != r.Threads {
				t.Errorf("Install filtered %d of %d threads, want all", r.Filtered, r.Threads)
			}
		})
	}
}

func TestKernelKillsX32(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("x32 exists only on amd64, not %s", runtime.GOARCH)
	}
	requireSeccomp(t)
	_, _, err := startChild(t, "x32")
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("child error = %v, want it killed by SIGSYS", err)
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGSYS {
		t.Fatalf("child ended with %v, want killed by SIGSYS", exit)
	}
}

func TestInstallRejectsBadPrograms(t *testing.T) {
	// Both fail before any state changes, so this is safe in the test
	// process itself.
	if err := Install(nil); err == nil {
		t.Error("Install(nil) succeeded")
	}
	if err := Install(make([]unix.SockFilter, bpfMaxInsns+1)); err == nil {
		t.Error("Install of an oversized program succeeded")
	}
}
