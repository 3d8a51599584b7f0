package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

// newFake returns a fake backend, named native, that interprets a tiny
// language so that every verdict can be asked for from the command line.
// The code is one command:
//
//	print TEXT     write TEXT to stdout
//	eprint TEXT    write TEXT to stderr
//	cat            copy stdin to stdout
//	exit N         exit with code N
//	sleep          run out of time
//	oom            be killed for memory
//	flood          write more than the output cap
//	segv           die of SIGSEGV
//	warn           succeed with a backend warning
//	broken         make the sandbox fail
//	touch NAME     write the file NAME in the workspace
//	ls             list the workspace's files but the source
//	syntax error   (fakec) fail to compile
//	compile error TEXT  (fakec) fail to compile, saying TEXT
func newFake() *sandboxtest.Fake {
	return &sandboxtest.Fake{
		BackendName: "native",
		Report: sandbox.Report{Backend: "native", Available: true,
			Checks:   []sandbox.Check{{Name: "user namespaces", OK: true, Detail: "yes"}, {Name: "cgroup", OK: true, Detail: "v1"}},
			Warnings: []string{"fake isolation"}},
		Programs: map[string]sandboxtest.Step{"/usr/bin/fakecc": fakeCompile},
		Default:  fakeRun,
	}
}

// fakeCode is the code of a run: the source file the fake wrote into the
// workspace, or that a compiled program finds there.
func fakeCode(spec *sandbox.Spec) (string, error) {
	src, _ := filepath.Glob(filepath.Join(spec.Workspace, "main.*"))
	if len(src) != 1 {
		return "", errors.New("no source in the workspace")
	}
	b, err := os.ReadFile(src[0])
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// fakeResult is a run's result before the code says otherwise.
func fakeResult() *sandbox.Result {
	return &sandbox.Result{Status: sandbox.StatusOK, WallTime: 10 * time.Millisecond, CPUTime: 5 * time.Millisecond,
		Samples: []sandbox.Sample{{At: 10 * time.Millisecond, CPUTime: 5 * time.Millisecond, Memory: 1 << 20}}}
}

// fakeCompile is the fakec compiler's step.
func fakeCompile(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	code, err := fakeCode(spec)
	if err != nil {
		return nil, err
	}
	res := fakeResult()
	if code == "syntax error" {
		res.Status, res.ExitCode, res.Stderr = sandbox.StatusNonzeroExit, 1, []byte("main.fkc:1: syntax error\n")
	}
	if msg, ok := strings.CutPrefix(code, "compile error "); ok {
		res.Status, res.ExitCode, res.Stderr = sandbox.StatusNonzeroExit, 1, []byte(msg+"\n")
	}
	return res, nil
}

// fakeRun runs a program of the tiny language.
func fakeRun(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	code, err := fakeCode(spec)
	if err != nil {
		return nil, err
	}
	res := fakeResult()
	cmd, arg, _ := strings.Cut(code, " ")
	switch cmd {
	case "print":
		res.Stdout = []byte(arg + "\n")
	case "eprint":
		res.Stderr = []byte(arg + "\n")
	case "cat":
		if spec.Stdin != nil {
			var b bytes.Buffer
			_, _ = b.ReadFrom(spec.Stdin)
			res.Stdout = b.Bytes()
		}
	case "exit":
		n, _ := strconv.Atoi(arg)
		res.Status, res.ExitCode = sandbox.StatusNonzeroExit, n
	case "sleep":
		res.Status, res.ExitCode, res.Signal, res.TimeLimit = sandbox.StatusTimeLimit, -1, syscall.SIGKILL, "wall"
		res.Stdout = []byte("partial\n")
	case "oom":
		res.Status, res.ExitCode, res.Signal, res.MemoryExceeded = sandbox.StatusMemoryLimit, -1, syscall.SIGKILL, true
	case "flood":
		res.Status, res.ExitCode, res.Signal, res.StdoutTruncated = sandbox.StatusOutputLimit, -1, syscall.SIGKILL, true
		res.Stdout = bytes.Repeat([]byte("y"), int(spec.Limits.OutputBytes))
	case "segv":
		res.Status, res.ExitCode, res.Signal = sandbox.StatusSignaled, -1, syscall.SIGSEGV
	case "warn":
		res.Warnings = []string{"memory limited by rlimits only"}
	case "broken":
		return nil, errors.New("unable to pivot_root")
	case "touch":
		if err := os.WriteFile(filepath.Join(spec.Workspace, arg), []byte(arg), 0o644); err != nil {
			return nil, err
		}
	case "ls":
		entries, _ := os.ReadDir(spec.Workspace)
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), "main.") {
				res.Stdout = append(res.Stdout, e.Name()+"\n"...)
			}
		}
	}
	return res, nil
}

// testApp is an App over a registry holding the fake as "native", with no
// environment, so that nothing of the machine running the tests leaks in.
type testApp struct {
	App
	fake           *sandboxtest.Fake
	stdout, stderr *bytes.Buffer
}

func newApp(t *testing.T, stdin string) *testApp {
	t.Helper()
	fake := newFake()
	r := backend.NewRegistry()
	backend.Add(r, backend.Module[struct{}]{Name: "native",
		New: func(backend.Env, struct{}) (sandbox.Backend, error) { return fake, nil }})
	backend.Add(r, backend.Module[struct{}]{Name: "docker",
		New: func(backend.Env, struct{}) (sandbox.Backend, error) { return nil, errors.New("no docker socket") }})
	ta := &testApp{fake: fake, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	ta.App = App{
		Stdin:     strings.NewReader(stdin),
		Stdout:    ta.stdout,
		Stderr:    ta.stderr,
		LookupEnv: stateEnv(stateDir(t)),
		Registry:  r,
		// Not the machine's /etc/coderunner: its configuration and
		// recorded images are not the tests'.
		ConfigDir: t.TempDir(),
		Version:   "1.2.3",
		Commit:    "abc123",
	}
	return ta
}

// stateDir is a test directory for the sessions of run. As root they are
// tmpfs mounts, which outlive the command: they are unmounted when the test
// ends, before the directory is removed.
func stateDir(t *testing.T) string {
	dir := t.TempDir()
	t.Cleanup(func() {
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
				if err := unix.Unmount(f[4], unix.MNT_DETACH); err != nil {
					t.Errorf("unmount %s: %v", f[4], err)
				}
			}
		}
	})
	return dir
}

// stateEnv is an environment holding only XDG_STATE_HOME=dir, so that
// sessions of run are kept in a test directory.
func stateEnv(dir string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if k == "XDG_STATE_HOME" {
			return dir, true
		}
		return "", false
	}
}

// run runs the command line with the fake languages configured.
func (ta *testApp) run(args ...string) int {
	if len(args) > 0 && args[0] != "version" && args[0] != "help" {
		args = append([]string{args[0], "--config", filepath.Join("testdata", "fake.yaml")}, args[1:]...)
	}
	return ta.Run(context.Background(), args)
}

// source writes code to a file with the given name in a temporary
// directory and returns its path.
func source(t *testing.T, name, code string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
