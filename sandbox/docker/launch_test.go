package docker_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/docker"
)

// warmBackend is a backend with a warm pool of n that has learnt the
// runs of shSpec.
func warmBackend(t *testing.T, opts docker.Options) *docker.Backend {
	t.Helper()
	requireWarm(t)
	if opts.Warm == 0 {
		opts.Warm = 1
	}
	b := newBackend(t, opts)
	if _, err := b.Run(context.Background(), shSpec("true")); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, b, 1)
	return b
}

// TestLaunchedNotExeced: a warm container's program is started by its
// launcher, docker-init's child, not by an exec of the engine (whose
// process's parent is outside the container: 0).
func TestLaunchedNotExeced(t *testing.T) {
	b := warmBackend(t, docker.Options{})
	out := string(runWarm(t, b, shSpec(`tr '\0' ' ' </proc/$PPID/cmdline; echo; grep PPid /proc/$PPID/status; tr '\0' ' ' </proc/1/cmdline`)).Stdout)
	if !strings.HasPrefix(out, "/bin/sh -c printf R;") || !strings.Contains(out, "\nPPid:\t1\n/sbin/docker-init") {
		t.Errorf("the program's parent is not the launcher, docker-init's child:\n%s", out)
	}
	e := warmBackend(t, docker.Options{WarmExec: true})
	out = string(runWarm(t, e, shSpec(`echo $PPID`)).Stdout)
	if out != "0\n" {
		t.Errorf("with WarmExec the program is not an exec: its parent is %q", out)
	}
}

// TestLaunchedAsExeced runs the same programs through the launcher and
// through docker exec: the environment, user, directory, descriptors,
// signal dispositions, privileges, umask and rlimits are the same, and
// the environment is exactly the spec's.
func TestLaunchedAsExeced(t *testing.T) {
	launched := warmBackend(t, docker.Options{})
	execed := warmBackend(t, docker.Options{WarmExec: true})
	env := []string{"PATH=/usr/bin:/bin", "A=1", "HOME=/nowhere", "B=x y", "C=$(id) `id` 'q' \"d\" \\"}
	for _, tc := range []struct {
		name string
		spec *sandbox.Spec
	}{
		{"env", &sandbox.Spec{Args: []string{"/usr/bin/env"}, Env: env}},
		{"state", &sandbox.Spec{Args: []string{"/bin/sh", "-c", `[ "$(id -u)" = "$(id -g)" ] && [ "$(id -G)" = "$(id -g)" ] && echo one user, its own group; pwd; umask; ulimit -a; grep -E '^(Sig(Ign|Blk)|NoNewPrivs|Cap(Inh|Prm|Eff|Bnd|Amb)|Seccomp):' /proc/self/status; for f in /proc/self/fd/*; do echo "$f $(readlink "$f" | sed 's/:.*//')"; done`}, Env: env}},
		{"signal", &sandbox.Spec{Args: []string{"/bin/sh", "-c", `echo before >&2; kill -SEGV $$`}, Env: env}},
		{"dir", &sandbox.Spec{Args: []string{"/bin/pwd"}, Env: env, Dir: "/workspace/it's $(x) `y` dir",
			Files: []sandbox.File{{Path: "it's $(x) `y` dir/f", Content: []byte("x")}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Limits.WallTime = 30 * time.Second
			var outs [2]string
			for i, b := range []*docker.Backend{launched, execed} {
				s := *tc.spec
				if tc.name == "signal" {
					waitWarm(t, b, 1)
					res, err := b.Run(context.Background(), &s)
					if err != nil {
						t.Fatal(err)
					}
					outs[i] = fmt.Sprintf("%s %d %v %q %q", res.Status, res.ExitCode, res.Signal, res.Stdout, res.Stderr)
					continue
				}
				res := runWarm(t, b, &s)
				outs[i] = string(res.Stdout) + "\nstderr: " + string(res.Stderr)
			}
			if outs[0] != outs[1] {
				t.Errorf("launched:\n%s\nexeced:\n%s", outs[0], outs[1])
			}
			if tc.name == "signal" && !strings.Contains(outs[0], `"before\n"`) {
				t.Errorf("stderr of a signalled program: %s", outs[0])
			}
			if tc.name == "env" && outs[0] != strings.Join(env, "\n")+"\n\nstderr: " {
				t.Errorf("environment %q, want exactly %q", outs[0], env)
			}
		})
	}
}

// attacks are arguments meant to make the launcher's shell do more than
// run the program: each must reach it as it is.
var attacks = []string{
	"", " ", "two words", "'", "''", `'\''`, `"`, `\`, `\\`, `\'`, "$(touch /tmp/pwned)", "`touch /tmp/pwned`",
	"$HOME", "${PATH}", "$((1+1))", "*", "/*", "?", "[a-z]*", "~", "~root", "-e", "--", "-n",
	"; touch /tmp/pwned", "&& touch /tmp/pwned", "| touch /tmp/pwned", "> /tmp/pwned", "# comment",
	"a\tb", "a\rb", "\x01\x02\x1b[31m", "é ü 漢字", string([]byte{0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0xff}),
	"'; touch /tmp/pwned; echo '", `'"$(touch /tmp/pwned)"'`, "\\'$(touch /tmp/pwned)\\'",
}

// TestLaunchedArgvLiteral sends every attack as an argument, in the
// environment and in the working directory's name: each reaches the
// program byte for byte, and nothing runs but the program.
func TestLaunchedArgvLiteral(t *testing.T) {
	b := warmBackend(t, docker.Options{})
	args := append([]string{"/bin/sh", "-c", `printf '%s\0' "$@"; printf '%s\0' "$X"; ls -A /tmp`, "sh"}, attacks...)
	var want bytes.Buffer
	for _, a := range attacks {
		want.WriteString(a + "\x00")
	}
	for _, a := range attacks {
		spec := &sandbox.Spec{Args: args, Env: []string{"PATH=/usr/bin:/bin", "X=" + a}, Limits: sandbox.Limits{WallTime: 30 * time.Second}}
		got := runWarm(t, b, spec).Stdout
		if w := want.String() + a + "\x00"; string(got) != w {
			t.Fatalf("with X=%q the program got\n%q\nwant\n%q", a, got, w)
		}
	}
	for _, a := range attacks {
		if a == "" || strings.ContainsAny(a, "/") || strings.HasPrefix(a, "-") {
			continue // not a directory's name, or basename's option
		}
		spec := &sandbox.Spec{Args: []string{"/bin/sh", "-c", `basename "$(pwd)"; ls -A /tmp`}, Env: []string{"PATH=/usr/bin:/bin"},
			Dir: "/workspace/" + a, Files: []sandbox.File{{Path: a + "/f", Content: []byte("x")}}, Limits: sandbox.Limits{WallTime: 30 * time.Second}}
		if got := string(runWarm(t, b, spec).Stdout); got != a+"\n" {
			t.Errorf("in the directory %q the program is in %q", a, got)
		}
	}
}

// TestLaunchedStdin: what follows the request line is the program's
// stdin, intact: binary (with the engine's detach keys, ^P^Q), large,
// empty, and its end.
func TestLaunchedStdin(t *testing.T) {
	b := warmBackend(t, docker.Options{})
	all := make([]byte, 0, 512)
	for i := range 512 {
		all = append(all, byte(i))
	}
	large := make([]byte, 3<<20)
	_, _ = rand.Read(large)
	for _, tc := range []struct {
		name  string
		stdin []byte
	}{
		{"binary", append(append([]byte("\x10\x11\n\x00'$(id)\n"), all...), "\r\n\x04\x03\x1c"...)},
		{"large", large},
		{"empty", []byte{}},
		{"newline", []byte("\n")},
		{"no newline at the end", []byte("last line")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &sandbox.Spec{Args: []string{"/bin/sh", "-c", "cat; echo end >&2"}, Env: []string{"PATH=/usr/bin:/bin"},
				Stdin: bytes.NewReader(tc.stdin), Limits: sandbox.Limits{WallTime: 30 * time.Second, OutputBytes: 8 << 20}}
			res := runWarm(t, b, spec)
			if !bytes.Equal(res.Stdout, tc.stdin) {
				t.Errorf("the program read %d bytes, not the %d given (first differ at %d)", len(res.Stdout), len(tc.stdin), firstDiff(res.Stdout, tc.stdin))
			}
			// cat ended: it saw the end of its input.
			if string(res.Stderr) != "end\n" {
				t.Errorf("stderr %q", res.Stderr)
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestLaunchedEnds: exit codes, signals, limits and the counters of
// launched runs.
func TestLaunchedEnds(t *testing.T) {
	b := warmBackend(t, docker.Options{})
	run := func(spec *sandbox.Spec) *sandbox.Result {
		t.Helper()
		waitWarm(t, b, 1)
		taken := b.Warm().Taken
		res, err := b.Run(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		if b.Warm().Taken != taken+1 {
			t.Fatalf("the run of %q took no warm container", spec.Args)
		}
		return res
	}
	if res := run(shSpec("exit 3")); res.ExitCode != 3 || res.Status != sandbox.StatusNonzeroExit {
		t.Errorf("exit 3: status %s code %d", res.Status, res.ExitCode)
	}
	if res := run(shSpec("kill -TERM $$")); res.Signal != syscall.SIGTERM || res.Status != sandbox.StatusSignaled {
		t.Errorf("SIGTERM: status %s signal %v code %d", res.Status, res.Signal, res.ExitCode)
	}
	s := shSpec("sleep 60")
	s.Limits.WallTime = 300 * time.Millisecond
	if res := run(s); res.Status != sandbox.StatusTimeLimit {
		t.Errorf("past the wall time: status %s", res.Status)
	}
	s = shSpec("while :; do :; done")
	s.Limits.CPUTime = 200 * time.Millisecond
	if res := run(s); res.Status != sandbox.StatusTimeLimit || res.CPUTime < 200*time.Millisecond {
		t.Errorf("past the CPU time: status %s cpu %v", res.Status, res.CPUTime)
	}
	// The default memory limit: a pool is kept per stack limit, which
	// follows the memory limit.
	s = &sandbox.Spec{Args: []string{"/usr/bin/python3", "-c", "b = bytearray(400 << 20); print(len(b))"},
		Limits: sandbox.Limits{WallTime: 30 * time.Second}}
	if res := run(s); res.Status != sandbox.StatusMemoryLimit {
		t.Errorf("past the memory: status %s stderr %q", res.Status, res.Stderr)
	}
	s = shSpec("yes")
	s.Limits.OutputBytes = 1000
	if res := run(s); res.Status != sandbox.StatusOutputLimit || len(res.Stdout) > 1000 {
		t.Errorf("past the output cap: status %s, %d bytes", res.Status, len(res.Stdout))
	}
	// The counters are the run's, read at its end, every time: a lost
	// race with the container's removal would leave them empty.
	for i := range 20 {
		res := run(&sandbox.Spec{Args: []string{"/usr/bin/python3", "-c", "b = bytearray(20 << 20)"}, Limits: sandbox.Limits{WallTime: 30 * time.Second}})
		if res.Status != sandbox.StatusOK || res.CPUTime <= 0 || res.PeakMemory < 20<<20 {
			t.Fatalf("run %d: status %s cpu %v peak %d", i, res.Status, res.CPUTime, res.PeakMemory)
		}
	}
}

// TestLaunchedNewlineFallsBack: a value with a newline cannot go in the
// request line; the run gets a container of its own and runs.
func TestLaunchedNewlineFallsBack(t *testing.T) {
	b := warmBackend(t, docker.Options{})
	for _, spec := range []*sandbox.Spec{
		shSpec("printf '%s' \"$1\"\necho", "X=1"),
		shSpec(`printf '%s' "$X"`, "X=a\nb"),
	} {
		taken := b.Warm().Taken
		res, err := b.Run(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != sandbox.StatusOK {
			t.Errorf("status %s stderr %q", res.Status, res.Stderr)
		}
		if b.Warm().Taken != taken {
			t.Errorf("a run with a newline took a warm container")
		}
	}
	res, err := b.Run(context.Background(), shSpec(`printf '%s' "$X"`, "X=a\nb"))
	if err != nil || string(res.Stdout) != "a\nb" {
		t.Errorf("stdout %q, %v", res.Stdout, err)
	}
}

// TestLaunchedDeadLauncher: the launchers of the idle warm containers are
// killed; the next run finds that out when it takes one, makes a
// container of its own, and the pool is made anew.
func TestLaunchedDeadLauncher(t *testing.T) {
	b := warmBackend(t, docker.Options{Warm: 2})
	waitWarm(t, b, 2)
	out, err := exec.Command("docker", "ps", "-q", "--filter", "label=coderunner.pid="+strconv.Itoa(os.Getpid()),
		"--filter", "label=coderunner.warm").Output()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, id := range strings.Fields(string(out)) {
		pid, err := exec.Command("docker", "inspect", "-f", "{{.State.Pid}}", id).Output()
		if err != nil {
			t.Fatal(err)
		}
		p := strings.TrimSpace(string(pid))
		children, err := os.ReadFile("/proc/" + p + "/task/" + p + "/children")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range strings.Fields(string(children)) {
			n, _ := strconv.Atoi(c)
			if err := syscall.Kill(n, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed++
		}
	}
	if killed < 2 {
		t.Fatalf("killed %d launchers, want 2", killed)
	}
	// Killed: their containers end, and may still be in the pool.
	taken := b.Warm().Taken
	res, err := b.Run(context.Background(), shSpec("echo ran"))
	if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout) != "ran\n" {
		t.Fatalf("after the launchers died: %v %+v", err, res)
	}
	if b.Warm().Taken != taken {
		t.Errorf("the run counts as served by a dead warm container")
	}
	waitWarm(t, b, 2)
	runWarm(t, b, shSpec("true"))
}
