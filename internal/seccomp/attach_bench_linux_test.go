package seccomp

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// attachMode makes the test binary a child that attaches the filter
// repeatedly and prints how long each attach took, in nanoseconds.
const attachMode = "attach"

// attachCountEnv tells an attach child how many times to attach.
const attachCountEnv = "CODERUNNER_SECCOMP_TEST_ATTACHES"

// attachBatch is how many filters one child stacks. The kernel caps the
// instructions of all stacked filters at 32768 (MAX_INSNS_PER_PATH), and
// every attach after the first costs the same as the first: the kernel
// only emulates the new filter, for the numbers the older ones allow.
const attachBatch = 100

func runAttachChild() int {
	n, err := strconv.Atoi(os.Getenv(attachCountEnv))
	if err != nil || n < 1 || n > attachBatch {
		fmt.Fprintf(os.Stderr, "bad %s: %q\n", attachCountEnv, os.Getenv(attachCountEnv))
		return 2
	}
	prog, err := Program()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// Attach the way the native backend's C init does: one thread, no
	// TSYNC, so the cost measured is the kernel's preparation of the filter.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	durations := make([]int64, n)
	for i := range durations {
		start := time.Now()
		_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0,
			uintptr(unsafe.Pointer(&fprog))) //nolint:gosec // prog is kept alive below
		durations[i] = int64(time.Since(start))
		if errno != 0 {
			fmt.Fprintf(os.Stderr, "seccomp: %v\n", errno)
			return 2
		}
	}
	runtime.KeepAlive(prog)
	if err := json.NewEncoder(os.Stdout).Encode(durations); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// BenchmarkAttach measures seccomp(SECCOMP_SET_MODE_FILTER) with the
// filter, which the native backend pays on every run. The attaches happen
// in child processes so that the test binary itself stays unfiltered; ns/op
// is the median attach, excluding the children's start-up.
func BenchmarkAttach(b *testing.B) {
	requireSeccomp(b)
	var samples []int64
	for remaining := b.N; remaining > 0; remaining -= attachBatch {
		n := min(remaining, attachBatch)
		cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+attachMode, attachCountEnv+"="+strconv.Itoa(n))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("attach child: %v", err)
		}
		var d []int64
		if err := json.Unmarshal(out, &d); err != nil || len(d) != n {
			b.Fatalf("attach child printed %q (%v), want %d durations", out, err, n)
		}
		samples = append(samples, d...)
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2]), "ns/op")
	b.ReportMetric(float64(samples[len(samples)*9/10]), "p90-ns/op")
}
