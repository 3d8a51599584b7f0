// Package sandboxtest is the conformance suite every sandbox backend must
// pass: limits hit and reported right, isolation seen from inside, and
// nothing left behind. Each attack is a test that fails if the defence it
// targets is missing.
//
// A backend's own test calls Run with a way to build the backend and the
// facts of its environment.
//
// Fake is the backend the tests of the layers above the sandbox use
// instead: it runs nothing, answers each run as the test scripts it, and
// records what it was asked.
package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
)

// Env describes what a backend offers inside its sandbox.
type Env struct {
	// Backend is the backend under test.
	Backend sandbox.Backend
	// Mounts are added to every spec: the system files the programs below
	// need (/usr and friends). Backends whose image holds them leave it
	// empty.
	Mounts []sandbox.Mount
	// Shell and Python are absolute paths inside the sandbox.
	Shell  string
	Python string
	// Leftovers, when set, reports anything a finished run left on the
	// host (processes, cgroups, mounts, temporary files). It is called
	// after every test.
	Leftovers func() error
	// Kept, for a backend that keeps sandboxes (sandbox.Reuser), names
	// each idle sandbox ser keeps (native: its init's host process id):
	// the series tests check with it that a run reused the sandbox of
	// the one before, since nothing inside a sandbox may tell.
	Kept func(ser sandbox.Series) []string
	// QuotasPerSandbox is set for a backend that gives each sandbox a
	// host user of its own for the kernel's per-user counts (native as
	// root): every sandbox at once then gets its whole caps.
	QuotasPerSandbox bool
	// CC, when set, is a host C compiler used to build static test
	// programs that are then copied into the sandbox.
	CC string
}

// Run runs the whole suite against env.
func Run(t *testing.T, env Env) {
	if env.Shell == "" {
		env.Shell = "/bin/sh"
	}
	if env.Python == "" {
		env.Python = "/usr/bin/python3"
	}
	s := &suite{Env: env}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"True", s.testTrue},
		{"PythonPrint", s.testPythonPrint},
		{"ExitCode", s.testExitCode},
		{"Signal", s.testSignal},
		{"Stdin", s.testStdin},
		{"StdinDefaultsToDevNull", s.testStdinDevNull},
		{"Files", s.testFiles},
		{"TmpFiles", s.testTmpFiles},
		{"WorkingDirectory", s.testWorkingDirectory},
		{"WallTimeLimit", s.testWallTime},
		{"CPUTimeLimit", s.testCPUTime},
		{"MemoryLimit", s.testMemory},
		{"MemoryExceededByChild", s.testMemoryChild},
		{"OutputLimit", s.testOutputLimit},
		{"GigabyteOfOutput", s.testGigabyteOutput},
		{"StreamsCappedSeparately", s.testStreamsSeparately},
		{"KeepOutput", s.testKeepOutput},
		{"SlowReader", s.testSlowReader},
		{"ForkBomb", s.testForkBomb},
		{"BackgroundChildKilled", s.testBackgroundChild},
		{"Cancel", s.testCancel},
		{"FillTmp", s.testFillTmp},
		{"FillWorkspace", s.testFillWorkspace},
		{"HostWorkspaceQuietOnReturn", s.testHostWorkspaceQuiet},
		{"HostWorkspaceCapped", s.testHostWorkspaceCapped},
		{"HostWorkspaceUncappedRefused", s.testHostWorkspaceUncapped},
		{"HostWorkspaceKeptAcrossRuns", s.testHostWorkspaceKept},
		{"MountTablesHideHostPaths", s.testMountinfoHostPaths},
		{"FileSizeLimit", s.testFileSize},
		{"NothingCarriesOver", s.testNothingCarriesOver},
		{"NothingOfAnEarlierRun", s.testNothingOfAnEarlierRun},
		{"HostQuotasLeftUsable", s.testHostQuotas},
		{"HostFilesInvisible", s.testHostFiles},
		{"ProcOfInit", s.testProcRoot},
		{"SymlinkAndDotDot", s.testSymlinks},
		{"ServerEnvironmentInvisible", s.testEnvironment},
		{"NoNetwork", s.testNetwork},
		{"NotRoot", s.testNotRoot},
		{"Setuid0", s.testSetuid},
		{"Mount", s.testMount},
		{"Ptrace", s.testPtrace},
		{"NewNamespaces", s.testUnshare},
		{"IOUring", s.testIOUring},
		{"TIOCSTI", s.testTIOCSTI},
		{"Syscall32Bit", s.testSyscall32},
		{"SocketFamilies", s.testSocketFamilies},
		{"DeniedCalls", s.testDeniedCalls},
		{"NoKernelLog", s.testDmesg},
		{"ReadOnlySystem", s.testReadOnly},
		{"CPUAndMemoryMeasured", s.testMeasured},
		{"Samples", s.testSamples},
		{"InvalidSpec", s.testInvalidSpec},
		{"ProgramMissing", s.testProgramMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t)
			if env.Leftovers != nil {
				if err := waitClean(t, env.Leftovers); err != nil {
					t.Errorf("left behind: %v", err)
				}
			}
		})
	}
	if reuser, ok := env.Backend.(sandbox.Reuser); ok {
		t.Run("Series", func(t *testing.T) { s.runSeries(t, reuser) })
	}
}

// waitClean gives the kernel a moment to finish tearing down what a run
// released (namespaces and cgroups go away asynchronously; docker removes
// a cancelled run's container in the background): 50 looks 20 ms apart,
// times testutil.TimeScale where everything runs slowly (under emulation
// that removal alone takes longer).
func waitClean(t *testing.T, check func() error) error {
	t.Helper()
	var err error
	for range int(50 * testutil.TimeScale(t)) {
		if err = check(); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

type suite struct {
	Env
}

func (s *suite) spec(args ...string) *sandbox.Spec {
	return &sandbox.Spec{
		Args:   args,
		Env:    []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/workspace", "LANG=C.UTF-8"},
		Mounts: s.Mounts,
		Limits: sandbox.Limits{WallTime: 20 * time.Second, CPUTime: 20 * time.Second, CPUs: 1},
	}
}

func (s *suite) sh(script string) *sandbox.Spec { return s.spec(s.Shell, "-c", script) }
func (s *suite) py(code string) *sandbox.Spec   { return s.spec(s.Python, "-c", code) }

func (s *suite) run(t *testing.T, spec *sandbox.Spec) *sandbox.Result {
	t.Helper()
	res, err := s.Backend.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("run %q: %v", spec.Args, err)
	}
	return res
}

// expect checks the status and prints everything the run produced if it is
// not the one expected.
func expect(t *testing.T, res *sandbox.Result, want sandbox.Status) {
	t.Helper()
	if res.Status != want {
		t.Fatalf("status %s, want %s (exit %d, signal %v, time limit %q, oom %v)\nstdout: %.2000s\nstderr: %.2000s",
			res.Status, want, res.ExitCode, res.Signal, res.TimeLimit, res.MemoryExceeded, res.Stdout, res.Stderr)
	}
}

func (s *suite) testTrue(t *testing.T) {
	res := s.run(t, s.spec("/bin/true"))
	expect(t, res, sandbox.StatusOK)
	if res.ExitCode != 0 || res.Signal != 0 || len(res.Stdout) != 0 || len(res.Stderr) != 0 {
		t.Fatalf("unexpected result %+v", res)
	}
}

func (s *suite) testPythonPrint(t *testing.T) {
	res := s.run(t, s.py(`import sys; print("Hello, World!"); print("err", file=sys.stderr)`))
	expect(t, res, sandbox.StatusOK)
	if string(res.Stdout) != "Hello, World!\n" || string(res.Stderr) != "err\n" {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
}

func (s *suite) testExitCode(t *testing.T) {
	res := s.run(t, s.sh("exit 42"))
	expect(t, res, sandbox.StatusNonzeroExit)
	if res.ExitCode != 42 {
		t.Fatalf("exit code %d, want 42", res.ExitCode)
	}
}

func (s *suite) testSignal(t *testing.T) {
	res := s.run(t, s.py("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"))
	expect(t, res, sandbox.StatusSignaled)
	if res.Signal != syscall.SIGSEGV || res.ExitCode != -1 {
		t.Fatalf("signal %v exit %d, want SIGSEGV and -1", res.Signal, res.ExitCode)
	}
}

func (s *suite) testStdin(t *testing.T) {
	spec := s.sh("tr a-z A-Z")
	input := strings.Repeat("hello sandbox\n", 20000) // larger than a pipe buffer
	spec.Stdin = strings.NewReader(input)
	spec.Limits.OutputBytes = int64(len(input))
	res := s.run(t, spec)
	expect(t, res, sandbox.StatusOK)
	if string(res.Stdout) != strings.ToUpper(input) {
		t.Fatalf("stdout has %d bytes, want the %d bytes of input upper-cased", len(res.Stdout), len(input))
	}
}

func (s *suite) testStdinDevNull(t *testing.T) {
	res := s.run(t, s.sh("cat; readlink /proc/self/fd/0 || true"))
	expect(t, res, sandbox.StatusOK)
	if strings.TrimSpace(string(res.Stdout)) != "/dev/null" {
		t.Fatalf("stdin is %q, want /dev/null", res.Stdout)
	}
}

func (s *suite) testFiles(t *testing.T) {
	spec := s.sh("cat main.txt src/lib.txt && test -x run.sh && ./run.sh && touch new && rm main.txt")
	spec.Files = []sandbox.File{
		{Path: "main.txt", Content: []byte("main\n")},
		{Path: "src/lib.txt", Content: []byte("lib\n")},
		{Path: "run.sh", Content: []byte("#!/bin/sh\necho script\n"), Mode: 0o755},
	}
	res := s.run(t, spec)
	expect(t, res, sandbox.StatusOK)
	if string(res.Stdout) != "main\nlib\nscript\n" {
		t.Fatalf("stdout %q", res.Stdout)
	}
}

func (s *suite) testWorkingDirectory(t *testing.T) {
	res := s.run(t, s.sh(`pwd; echo "$HOME"; touch /workspace/ok && touch /tmp/ok && echo writable`))
	expect(t, res, sandbox.StatusOK)
	if string(res.Stdout) != "/workspace\n/workspace\nwritable\n" {
		t.Fatalf("stdout %q", res.Stdout)
	}
}

func (s *suite) testWallTime(t *testing.T) {
	spec := s.sh("echo started; sleep 30")
	// The program must print before its limit passes, which counts from
	// the backend's start of it (docker's exec included): under
	// emulation that start alone may take longer than 300 ms.
	spec.Limits.WallTime = time.Duration(float64(300*time.Millisecond) * testutil.TimeScale(t))
	res := s.run(t, spec)
	expect(t, res, sandbox.StatusTimeLimit)
	if res.TimeLimit != "wall" || res.WallTime < spec.Limits.WallTime {
		t.Fatalf("time limit %q after %v, want wall after at least %v", res.TimeLimit, res.WallTime, spec.Limits.WallTime)
	}
	if string(res.Stdout) != "started\n" {
		t.Fatalf("output before the limit was lost: %q", res.Stdout)
	}
}

func (s *suite) testCPUTime(t *testing.T) {
	spec := s.py("while True: pass")
	spec.Limits.CPUTime = 300 * time.Millisecond
	res := s.run(t, spec)
	expect(t, res, sandbox.StatusTimeLimit)
	if res.TimeLimit != "cpu" || res.CPUTime < spec.Limits.CPUTime {
		t.Fatalf("time limit %q with %v CPU, want cpu with at least %v", res.TimeLimit, res.CPUTime, spec.Limits.CPUTime)
	}
}

func (s *suite) testMemory(t *testing.T) {
	spec := s.py("b = bytearray(400 << 20); print(len(b))")
	spec.Limits.Memory = 64 * sandbox.MiB
	res := s.run(t, spec)
	expect(t, res, sandbox.StatusMemoryLimit)
	if !res.MemoryExceeded {
		t.Fatal("MemoryExceeded is false after an OOM kill")
	}
	if res.PeakMemory > 64*sandbox.MiB+sandbox.MiB {
		t.Fatalf("peak memory %d is above the 64 MiB limit", res.PeakMemory)
	}
}

func (s *suite) testMemoryChild(t *testing.T) {
	spec := s.sh(s.Python + ` -c "b = bytearray(400 << 20)"; echo "child status $?"`)
	spec.Limits.Memory = 64 * sandbox.MiB
	res := s.run(t, spec)
	expect(t, res, sandbox.StatusOK)
	if !res.MemoryExceeded {
		t.Fatalf("MemoryExceeded is false though a child was OOM-killed; stdout %q", res.Stdout)
	}
	if string(res.Stdout) != "child status 137\n" {
		t.Fatalf("stdout %q, want the child killed by SIGKILL", res.Stdout)
	}
}

func (s *suite) testOutputLimit(t *testing.T) {
	spec := s.spec("/usr/bin/yes")
	spec.Limits.OutputBytes = 1000
	res := s.run(t, spec)
	expect(t, res, sandbox.StatusOutputLimit)
	if len(res.Stdout) != 1000 || !res.StdoutTruncated || res.StderrTruncated {
		t.Fatalf("stdout %d bytes truncated %v/%v, want exactly 1000 and stdout truncated", len(res.Stdout), res.StdoutTruncated, res.StderrTruncated)
	}
	if string(res.Stdout) != strings.Repeat("y\n", 500) {
		t.Fatalf("the kept output is not the program's first 1000 bytes: %q", res.Stdout[:20])
	}
}

func (s *suite) testGigabyteOutput(t *testing.T) {
	spec := s.sh("head -c 1073741824 /dev/zero; echo finished >&2")
	res := s.run(t, spec)
	expect(t, res, sandbox.StatusOutputLimit)
	if int64(len(res.Stdout)) != sandbox.DefaultLimits.OutputBytes || !res.StdoutTruncated {
		t.Fatalf("stdout %d bytes, want the cap %d", len(res.Stdout), sandbox.DefaultLimits.OutputBytes)
	}
	if bytes.Contains(res.Stderr, []byte("finished")) {
		t.Fatal("the program ran on after passing the output cap")
	}
}

func (s *suite) testStreamsSeparately(t *testing.T) {
	spec := s.sh("head -c 900 /dev/zero; head -c 900 /dev/zero >&2")
	spec.Limits.OutputBytes = 1000
	res := s.run(t, spec)
	expect(t, res, sandbox.StatusOK)
	if len(res.Stdout) != 900 || len(res.Stderr) != 900 || res.Truncated() {
		t.Fatalf("stdout %d stderr %d truncated %v: each stream has its own cap", len(res.Stdout), len(res.Stderr), res.Truncated())
	}
}

func (s *suite) testForkBomb(t *testing.T) {
	spec := s.sh(`bomb() { bomb | bomb & }; bomb; sleep 1; echo survived`)
	spec.Limits.Processes = 20
	spec.Limits.WallTime = 5 * time.Second
	res := s.run(t, spec)
	if res.Status == sandbox.StatusTimeLimit && res.TimeLimit == "cpu" {
		t.Fatalf("fork bomb exhausted CPU instead of hitting the process limit")
	}
	// The shell survives with the bomb contained; the processes are gone.
	if !bytes.Contains(res.Stderr, []byte("fork")) && !bytes.Contains(res.Stderr, []byte("Resource temporarily unavailable")) {
		t.Fatalf("no sign the process limit stopped the bomb: status %s stderr %.500s", res.Status, res.Stderr)
	}
}

func (s *suite) testBackgroundChild(t *testing.T) {
	// A double-forked, setsid'd child that outlives the program, holding
	// stdout open.
	spec := s.sh(`(setsid sh -c 'sleep 60; echo late' &) ; echo parent done`)
	start := time.Now()
	res := s.run(t, spec)
	expect(t, res, sandbox.StatusOK)
	if string(res.Stdout) != "parent done\n" {
		t.Fatalf("stdout %q", res.Stdout)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("run waited %v for a background child", d)
	}
}

func (s *suite) testCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	_, err := s.Backend.Run(ctx, s.sh("sleep 60"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func (s *suite) testFillTmp(t *testing.T) {
	spec := s.sh("dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>&1; df -k /tmp | tail -1")
	spec.Limits.TmpSize = 8 * sandbox.MiB
	res := s.run(t, spec)
	if !bytes.Contains(res.Stdout, []byte("No space left")) {
		t.Fatalf("filling /tmp past 8 MiB did not fail: %s", res.Stdout)
	}
}

func (s *suite) testFillWorkspace(t *testing.T) {
	spec := s.sh("dd if=/dev/zero of=/workspace/fill bs=1M count=64 2>&1")
	spec.Limits.WorkspaceSize = 8 * sandbox.MiB
	spec.Limits.FileSize = 1 * sandbox.GiB
	res := s.run(t, spec)
	if !bytes.Contains(res.Stdout, []byte("No space left")) {
		t.Fatalf("filling the workspace past 8 MiB did not fail: %s", res.Stdout)
	}
	// Many empty files are bounded too.
	spec = s.py(`
import os
n = 0
try:
    while n < 1000000:
        open("/workspace/f%d" % n, "w").close(); n += 1
except OSError as e:
    print("stopped", n, e.errno)
`)
	res = s.run(t, spec)
	if !bytes.HasPrefix(res.Stdout, []byte("stopped")) {
		t.Fatalf("a million empty files fitted in the workspace: %s %s", res.Stdout, res.Stderr)
	}
}

// testHostWorkspaceQuiet attacks the promise that a caller's workspace is
// the caller's again when Run returns: a writer the program leaves behind,
// in a session of its own and deaf to the polite signals, appends to a
// file there without pause; once Run has returned, the file must not grow.
// The program ends by itself in one case and is killed at its wall-time
// limit in the other.
func (s *suite) testHostWorkspaceQuiet(t *testing.T) {
	const writer = `(setsid sh -c 'trap "" HUP INT TERM; while :; do echo x >> /workspace/log; done' >/dev/null 2>&1 &)
while [ ! -s /workspace/log ]; do :; done
echo writing
`
	for _, tc := range []struct {
		name   string
		script string
		want   sandbox.Status
	}{
		{"program ends", writer, sandbox.StatusOK},
		{"program killed", writer + "sleep 60\n", sandbox.StatusTimeLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.Require(t, capws.Supported(), "host workspaces are capped by a tmpfs mount, which needs root")
			d, err := capws.New("", "quiet-ws-", sandbox.DefaultLimits.WorkspaceSize, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = d.Remove() }()
			ws := d.Path
			spec := s.sh(tc.script)
			spec.Workspace = ws
			spec.Limits.WallTime = 2 * time.Second
			res := s.run(t, spec)
			size := func() int64 {
				fi, err := os.Lstat(filepath.Join(ws, "log"))
				if err != nil {
					t.Fatalf("the writer's file: %v", err)
				}
				return fi.Size()
			}
			before := size()
			expect(t, res, tc.want)
			time.Sleep(300 * time.Millisecond)
			if after := size(); after != before {
				t.Fatalf("the workspace was written after Run returned: %d bytes, then %d", before, after)
			}
		})
	}
}

// testHostWorkspaceKept runs three programs in one host workspace, as a
// session does: what the first leaves (files, a directory, with the
// usual modes), the next ones may change and remove, even while other
// sandboxes run meanwhile (a backend that gives each sandbox a user of its
// own must give a kept workspace's runs the same one).
func (s *suite) testHostWorkspaceKept(t *testing.T) {
	testutil.Require(t, capws.Supported(), "host workspaces are capped by a tmpfs mount, which needs root")
	d, err := capws.New("", "kept-ws-", sandbox.DefaultLimits.WorkspaceSize, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Remove() }()
	steps := []struct{ script, want string }{
		{"umask 022; mkdir -p /workspace/dir && echo one > /workspace/dir/f && echo one > /workspace/g && echo made", "made\n"},
		{"echo two >> /workspace/dir/f && echo two > /workspace/g && cat /workspace/dir/f /workspace/g", "one\ntwo\ntwo\n"},
		{"rm -r /workspace/dir /workspace/g && ls -A /workspace && echo removed", "removed\n"},
	}
	for i, step := range steps {
		// Another run at once, as from another session.
		other := make(chan struct{})
		go func() {
			defer close(other)
			_, _ = s.Backend.Run(context.Background(), s.sh("sleep 0.2"))
		}()
		spec := s.sh(step.script)
		spec.Workspace = d.Path
		res := s.run(t, spec)
		<-other
		expect(t, res, sandbox.StatusOK)
		if string(res.Stdout) != step.want {
			t.Fatalf("run %d in the kept workspace: %q (stderr %q), want %q", i+1, res.Stdout, res.Stderr, step.want)
		}
	}
}

func (s *suite) testFileSize(t *testing.T) {
	spec := s.sh("dd if=/dev/zero of=/workspace/big bs=1M count=8 2>&1; echo status $?")
	spec.Limits.FileSize = 1 * sandbox.MiB
	res := s.run(t, spec)
	if !bytes.Contains(res.Stdout, []byte("File too large")) && !bytes.Contains(res.Stdout, []byte("File size limit exceeded")) && res.Signal != syscall.SIGXFSZ {
		t.Fatalf("writing 8 MiB with a 1 MiB file size limit: %s (signal %v)", res.Stdout, res.Signal)
	}
}

func (s *suite) testNothingCarriesOver(t *testing.T) {
	res := s.run(t, s.sh("echo secret > /workspace/left; echo secret > /tmp/left; echo secret > /dev/shm/left"))
	expect(t, res, sandbox.StatusOK)
	res = s.run(t, s.sh("ls -A /workspace /tmp /dev/shm"))
	expect(t, res, sandbox.StatusOK)
	if bytes.Contains(res.Stdout, []byte("left")) {
		t.Fatalf("a file of the previous run is visible: %s", res.Stdout)
	}
}

func (s *suite) testHostFiles(t *testing.T) {
	res := s.run(t, s.sh(`
for f in /etc/shadow /root /home /etc/ssh /var /run /sys/kernel /boot; do
  if [ -e "$f" ]; then echo "visible: $f"; fi
done
grep -c . /etc/passwd`))
	if bytes.Contains(res.Stdout, []byte("visible")) {
		t.Fatalf("host paths visible: %s", res.Stdout)
	}
	host, err := os.ReadFile("/etc/passwd")
	if err == nil && strings.TrimSpace(string(res.Stdout)) == fmt.Sprint(bytes.Count(host, []byte("\n"))) && bytes.Count(host, []byte("\n")) > 3 {
		t.Fatalf("/etc/passwd has as many lines as the host's")
	}
}

func (s *suite) testProcRoot(t *testing.T) {
	res := s.run(t, s.sh(`
ls /proc/1/root/ 2>&1 | head -3
cat /proc/1/environ 2>&1 | head -c 200
cat /proc/1/root/etc/shadow 2>&1
# The init may hold descriptors of the host's tree while the program runs.
for n in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
	ls /proc/1/fd/$n/ 2>&1 | head -3
	cat /proc/1/fd/$n/etc/shadow 2>&1
	ls /proc/1/fd/$n/root/ /proc/1/fd/$n/proc/1/ 2>&1 | head -3
done
ls /proc/sys/kernel 2>&1 | head -1
cat /proc/kcore 2>&1 | head -c 10 | wc -c`))
	out := string(res.Stdout)
	for _, leak := range []string{"root:", "bin\n", "PATH="} {
		if strings.Contains(out, leak) {
			t.Fatalf("/proc gives the host away (%q): %s", leak, out)
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(out), "0") {
		t.Fatalf("/proc/kcore is readable: %s", out)
	}
}

func (s *suite) testSymlinks(t *testing.T) {
	res := s.run(t, s.sh(`
ln -s /etc/shadow /workspace/s; cat /workspace/s 2>&1
ln -s / /workspace/r; ls /workspace/r/root 2>&1
cat ../../../../../etc/shadow 2>&1
cd /workspace && cat ../../../../root/.bashrc 2>&1`))
	if bytes.Contains(res.Stdout, []byte("root:")) || bytes.Contains(res.Stdout, []byte("alias")) {
		t.Fatalf("a host file was read: %s", res.Stdout)
	}
}

func (s *suite) testEnvironment(t *testing.T) {
	const secret = "CODERUNNER_SUITE_SECRET"
	t.Setenv(secret, "hunter2")
	t.Setenv("INTERNAL_API_TOKEN", "hunter2")
	res := s.run(t, s.sh(`env; cat /proc/1/environ 2>/dev/null; cat /proc/self/environ`))
	if bytes.Contains(res.Stdout, []byte("hunter2")) {
		t.Fatalf("the server's environment is visible: %s", res.Stdout)
	}
	env := strings.Fields(string(res.Stdout))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "PATH", "HOME", "LANG", "PWD", "SHLVL", "_":
		default:
			t.Errorf("unexpected variable %q in the sandbox", kv)
		}
	}
}

func (s *suite) testNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			_ = c.Close()
			accepted <- struct{}{}
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	res := s.run(t, s.py(fmt.Sprintf(`
import socket
for host in ("127.0.0.1", "10.0.2.2", "8.8.8.8"):
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((host, %d)); print("connected", host)
    except OSError as e:
        print("refused", host, e.errno)
`, port)))
	if bytes.Contains(res.Stdout, []byte("connected")) {
		t.Fatalf("the sandbox reached the network: %s", res.Stdout)
	}
	select {
	case <-accepted:
		t.Fatal("the host listener accepted a connection from the sandbox")
	default:
	}
	if !bytes.Contains(res.Stdout, []byte("refused 127.0.0.1")) {
		t.Fatalf("unexpected output: %s %s", res.Stdout, res.Stderr)
	}
}

func (s *suite) testNotRoot(t *testing.T) {
	res := s.run(t, s.sh(`grep -E '^(Uid|CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status`))
	expect(t, res, sandbox.StatusOK)
	fields := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		k, v, _ := strings.Cut(line, ":")
		fields[k] = strings.TrimSpace(v)
	}
	for _, c := range []string{"CapEff", "CapPrm", "CapBnd", "CapAmb"} {
		if fields[c] != "0000000000000000" {
			t.Errorf("%s = %s, want no capabilities", c, fields[c])
		}
	}
	if fields["NoNewPrivs"] != "1" || fields["Seccomp"] != "2" {
		t.Errorf("NoNewPrivs %q Seccomp %q, want 1 and 2 (filter)", fields["NoNewPrivs"], fields["Seccomp"])
	}
}

func (s *suite) testSetuid(t *testing.T) {
	res := s.run(t, s.py(`
import os
try:
    os.setuid(0); os.setgid(0); print("became", os.getuid())
except OSError as e:
    print("denied", e.errno)
try:
    open("/etc/passwd", "a").write("x")
    print("wrote /etc/passwd")
except OSError as e:
    print("denied", e.errno)
`))
	if bytes.Contains(res.Stdout, []byte("became")) && !bytes.Contains(res.Stdout, []byte("became 0")) {
		t.Fatalf("unexpected: %s", res.Stdout)
	}
	if bytes.Contains(res.Stdout, []byte("wrote")) {
		t.Fatalf("the sandbox could write its /etc: %s", res.Stdout)
	}
}

// libcCall runs a syscall through ctypes and prints its errno.
func (s *suite) libcCall(t *testing.T, call string) string {
	t.Helper()
	res := s.run(t, s.py(`
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
r = `+call+`
print(r, ctypes.get_errno())
`))
	return strings.TrimSpace(string(res.Stdout)) + strings.TrimSpace(string(res.Stderr))
}

const eperm = "-1 1"

func (s *suite) testMount(t *testing.T) {
	if got := s.libcCall(t, `libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)`); got != eperm {
		t.Fatalf("mount: %s, want EPERM", got)
	}
}

func (s *suite) testPtrace(t *testing.T) {
	if got := s.libcCall(t, `libc.ptrace(0, 0, None, None)`); got != eperm {
		t.Fatalf("ptrace(TRACEME): %s, want EPERM", got)
	}
	if got := s.libcCall(t, `libc.ptrace(16, 1, None, None)`); got != eperm { // PTRACE_ATTACH to the init
		t.Fatalf("ptrace(ATTACH, 1): %s, want EPERM", got)
	}
}

func (s *suite) testUnshare(t *testing.T) {
	if got := s.libcCall(t, `libc.unshare(0x10000000)`); got != eperm { // CLONE_NEWUSER
		t.Fatalf("unshare(CLONE_NEWUSER): %s, want EPERM", got)
	}
	if got := s.libcCall(t, `libc.setns(0, 0)`); got != eperm {
		t.Fatalf("setns: %s, want EPERM", got)
	}
}

func (s *suite) testIOUring(t *testing.T) {
	if got := s.libcCall(t, `libc.syscall(425, 8, ctypes.create_string_buffer(120))`); got != eperm {
		t.Fatalf("io_uring_setup: %s, want EPERM", got)
	}
}

func (s *suite) testTIOCSTI(t *testing.T) {
	// EPERM comes from the filter; without it a non-terminal would give
	// ENOTTY and a terminal would take the byte.
	if got := s.libcCall(t, `libc.ioctl(0, 0x5412, ctypes.c_char_p(b"x"))`); got != eperm {
		t.Fatalf("ioctl(TIOCSTI): %s, want EPERM", got)
	}
}

func (s *suite) testSyscall32(t *testing.T) {
	if s.CC == "" {
		t.Skip("no C compiler given to build the 32-bit syscall probe")
	}
	bin := buildC(t, s.CC, `
#include <stdio.h>
int main(void) {
	long r;
	printf("before\n"); fflush(stdout);
	/* getpid through the 32-bit ABI */
	__asm__ volatile ("int $0x80" : "=a"(r) : "a"(20) : "memory");
	printf("32-bit syscall returned %ld\n", r);
	return 0;
}`)
	spec := s.spec("/workspace/probe")
	spec.Files = []sandbox.File{{Path: "probe", Content: bin, Mode: 0o755}}
	res := s.run(t, spec)
	if bytes.Contains(res.Stdout, []byte("returned")) {
		t.Fatalf("a 32-bit syscall went through: %s", res.Stdout)
	}
	if res.Signal != syscall.SIGSYS {
		t.Fatalf("status %s signal %v, want killed by SIGSYS", res.Status, res.Signal)
	}
}

func (s *suite) testDmesg(t *testing.T) {
	if got := s.libcCall(t, `libc.klogctl(3, ctypes.create_string_buffer(4096), 4096)`); got != eperm {
		t.Fatalf("syslog(READ_ALL): %s, want EPERM", got)
	}
}

func (s *suite) testReadOnly(t *testing.T) {
	res := s.run(t, s.sh(`for d in / /usr /usr/bin /etc /etc/alternatives /dev; do touch "$d/probe" 2>/dev/null && echo "wrote $d"; done; true`))
	expect(t, res, sandbox.StatusOK)
	if len(res.Stdout) != 0 {
		t.Fatalf("system directories are writable: %s", res.Stdout)
	}
}

func (s *suite) testMeasured(t *testing.T) {
	res := s.run(t, s.py("b = bytearray(48 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nx = sum(range(3000000))"))
	expect(t, res, sandbox.StatusOK)
	if res.PeakMemory < 48*sandbox.MiB {
		t.Errorf("peak memory %d, want at least the 48 MiB the program touched", res.PeakMemory)
	}
	if res.CPUTime <= 0 || res.WallTime <= 0 {
		t.Errorf("CPU time %v wall time %v, want both measured", res.CPUTime, res.WallTime)
	}
}

func (s *suite) testSamples(t *testing.T) {
	spec := s.py("import time\nb = bytearray(32 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nt = time.time()\nwhile time.time() - t < 0.5: pass")
	spec.SampleInterval = 50 * time.Millisecond
	res := s.run(t, spec)
	expect(t, res, sandbox.StatusOK)
	if len(res.Samples) < 3 {
		t.Fatalf("%d samples over half a second at 50 ms, want several", len(res.Samples))
	}
	last := res.Samples[len(res.Samples)-1]
	if last.CPUTime != res.CPUTime {
		t.Errorf("the last sample's CPU time %v is not the run's %v", last.CPUTime, res.CPUTime)
	}
	for i := 1; i < len(res.Samples); i++ {
		if res.Samples[i].At < res.Samples[i-1].At || res.Samples[i].CPUTime < res.Samples[i-1].CPUTime {
			t.Fatalf("samples go backwards: %+v", res.Samples)
		}
	}
}

func (s *suite) testInvalidSpec(t *testing.T) {
	for _, spec := range []*sandbox.Spec{
		{},
		{Args: []string{"relative"}},
		{Args: []string{"/bin/true"}, Files: []sandbox.File{{Path: "../escape"}}},
		{Args: []string{"/bin/true"}, Limits: sandbox.Limits{Memory: 1}},
		{Args: []string{"/bin/true"}, Mounts: []sandbox.Mount{{Source: "/usr", Target: "/proc"}}},
	} {
		if _, err := s.Backend.Run(context.Background(), spec); !errors.Is(err, sandbox.ErrInvalidSpec) {
			t.Errorf("spec %+v: err %v, want ErrInvalidSpec", spec, err)
		}
	}
}

// testProgramMissing runs a program that is not there: the run must end at
// once, as an error or as a failed run, never as a success or a hang, and
// then a run must work again.
func (s *suite) testProgramMissing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := s.Backend.Run(ctx, s.spec("/no/such/program"))
	switch {
	case ctx.Err() != nil:
		t.Fatalf("a missing program hung the run: %v", err)
	case err == nil && res.Status == sandbox.StatusOK:
		t.Fatalf("a missing program ran: %+v", res)
	}
	expect(t, s.run(t, s.spec("/bin/true")), sandbox.StatusOK)
}

// buildC compiles a static program on the host.
func buildC(t *testing.T, cc, src string) []byte {
	t.Helper()
	dir := t.TempDir()
	c := filepath.Join(dir, "p.c")
	if err := os.WriteFile(c, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "p")
	if b, err := exec.Command(cc, "-static", "-O1", "-o", out, c).CombinedOutput(); err != nil {
		t.Fatalf("compile probe: %v\n%s", err, b)
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}
