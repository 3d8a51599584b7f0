package execute

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

func TestStatusMapping(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name      string
		res       sandbox.Result
		status    Status
		exit      int
		msg       string // "" for a nil error_message
		truncated bool
		oom       bool
	}{
		{name: "ok", res: sandbox.Result{Status: sandbox.StatusOK},
			status: StatusSuccess},
		{name: "nonzero exit", res: sandbox.Result{Status: sandbox.StatusNonzeroExit, ExitCode: 3},
			status: StatusExecutionError, exit: 3, msg: "Process exited with code 3."},
		{name: "signaled", res: sandbox.Result{Status: sandbox.StatusSignaled, ExitCode: -1, Signal: syscall.SIGSEGV},
			status: StatusExecutionError, exit: 139, msg: "Process was killed by signal 11 (SIGSEGV)."},
		{name: "wall time", res: sandbox.Result{Status: sandbox.StatusTimeLimit, TimeLimit: "wall", ExitCode: -1, Signal: syscall.SIGKILL},
			status: StatusTimeout, exit: ExitTimeout, msg: "Execution timed out after 2 seconds."},
		{name: "cpu time", res: sandbox.Result{Status: sandbox.StatusTimeLimit, TimeLimit: "cpu", ExitCode: -1, Signal: syscall.SIGXCPU},
			status: StatusTimeout, exit: ExitTimeout, msg: "Execution timed out after 2 seconds."},
		{name: "timeout after an OOM kill of a child", res: sandbox.Result{Status: sandbox.StatusTimeLimit, MemoryExceeded: true, Signal: syscall.SIGKILL},
			status: StatusTimeout, exit: ExitTimeout, msg: "Execution timed out after 2 seconds.", oom: true},
		{name: "memory", res: sandbox.Result{Status: sandbox.StatusMemoryLimit, ExitCode: -1, Signal: syscall.SIGKILL, MemoryExceeded: true},
			status: StatusExecutionError, exit: 137, msg: "Memory limit of 64 MB exceeded.", oom: true},
		{name: "memory status alone implies memory_exceeded", res: sandbox.Result{Status: sandbox.StatusMemoryLimit, ExitCode: -1, Signal: syscall.SIGKILL},
			status: StatusExecutionError, exit: 137, msg: "Memory limit of 64 MB exceeded.", oom: true},
		{name: "child OOM-killed, program exits 1", res: sandbox.Result{Status: sandbox.StatusNonzeroExit, ExitCode: 1, MemoryExceeded: true},
			status: StatusExecutionError, exit: 1, msg: "Process exited with code 1.", oom: true},
		{name: "output limit", res: sandbox.Result{Status: sandbox.StatusOutputLimit, ExitCode: -1, Signal: syscall.SIGKILL, StdoutTruncated: true, Stdout: []byte("xxxx")},
			status: StatusExecutionError, exit: 137, msg: "output limit exceeded", truncated: true},
		{name: "output limit on stderr", res: sandbox.Result{Status: sandbox.StatusOutputLimit, ExitCode: -1, Signal: syscall.SIGKILL, StderrTruncated: true},
			status: StatusExecutionError, exit: 137, msg: "output limit exceeded", truncated: true},
		{name: "unknown status", res: sandbox.Result{Status: "weird"},
			status: StatusSetupError, exit: ExitSetupError, msg: `sandbox reported an unknown status "weird"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.res.WallTime = 20 * ms
			e, _, _ := newTest(t, sandboxtest.Returns(tt.res))
			res, err := e.Execute(context.Background(), Request{Language: "script", Code: "x",
				Limits: ExecutionLimits{TimeLimit: 2, MemoryLimit: 64}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tt.status || res.ExitCode != tt.exit {
				t.Errorf("status %s exit %d, want %s exit %d", res.Status, res.ExitCode, tt.status, tt.exit)
			}
			switch {
			case tt.msg == "" && res.ErrorMessage != nil:
				t.Errorf("error_message %q, want null", *res.ErrorMessage)
			case tt.msg != "" && res.Message() != tt.msg:
				t.Errorf("error_message %q, want %q", res.Message(), tt.msg)
			}
			if res.Truncated != tt.truncated || res.MemoryExceeded != tt.oom {
				t.Errorf("truncated %v memory_exceeded %v, want %v %v", res.Truncated, res.MemoryExceeded, tt.truncated, tt.oom)
			}
			if res.Stdout != string(tt.res.Stdout) {
				t.Errorf("stdout %q, want %q", res.Stdout, tt.res.Stdout)
			}
			if res.ExecutionTime != 0.02 {
				t.Errorf("execution_time %v, want 0.02", res.ExecutionTime)
			}
			if tt.status != StatusSetupError && (res.Verdict != tt.res.Status || res.Stage != StageRun) {
				t.Errorf("verdict %q stage %q", res.Verdict, res.Stage)
			}
		})
	}
}

func TestRunSpec(t *testing.T) {
	var ws, tmp string
	e, fb, tmpDir := newTest(t, func(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
		ws = spec.Workspace
		fi, err := os.Stat(ws)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("workspace mode %v, want 0700", fi.Mode().Perm())
		}
		if filepath.Dir(ws) != tmp {
			t.Errorf("workspace %s not under the configured temp dir %s", ws, tmp)
		}
		in, err := readAll(spec)
		if err != nil {
			t.Fatal(err)
		}
		if in != "some input" {
			t.Errorf("stdin %q", in)
		}
		return &sandbox.Result{Status: sandbox.StatusOK, Stdout: []byte("hi\n")}, nil
	})
	tmp = tmpDir
	var stdout bytes.Buffer
	id := "sess_1"
	res, err := e.Execute(context.Background(), Request{
		Language: "SC", Code: "print 1", Stdin: "some input", SessionID: &id, Stdout: &stdout,
		Limits: ExecutionLimits{TimeLimit: 1.5, MemoryLimit: 32, CPULimit: 0.25, MaxOutputChars: 500, Pids: 9},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(fb.Specs()) != 1 {
		t.Fatalf("%d runs, want 1", len(fb.Specs()))
	}
	spec := fb.Specs()[0]
	if want := []string{"/usr/bin/script-interp", "-q", "/workspace/main.sc"}; !slices.Equal(spec.Args, want) {
		t.Errorf("args %q, want %q", spec.Args, want)
	}
	wantEnv := []string{"PATH=/opt/script/bin:/usr/bin", "HOME=/workspace", "TMPDIR=/tmp", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "SCRIPT_MODE=safe"}
	if !slices.Equal(spec.Env, wantEnv) {
		t.Errorf("env %q, want %q", spec.Env, wantEnv)
	}
	if !slices.Contains(spec.Mounts, sandbox.Mount{Source: "/", Target: "/opt/script"}) {
		t.Errorf("mounts %v lack the recipe's", spec.Mounts)
	}
	if len(spec.Files) != 1 || spec.Files[0].Path != "main.sc" || string(spec.Files[0].Content) != "print 1" {
		t.Errorf("files %+v", spec.Files)
	}
	if spec.Dir != "/workspace" || spec.SampleInterval != DefaultSampleInterval {
		t.Errorf("dir %q sample interval %v", spec.Dir, spec.SampleInterval)
	}
	l := spec.Limits
	if l.WallTime != 1500*time.Millisecond || l.CPUTime != 1500*time.Millisecond || l.Memory != 32<<20 ||
		l.CPUs != 0.25 || l.Processes != 9 || l.OutputBytes != 500 {
		t.Errorf("limits %+v", l)
	}
	if err := spec.Validate(); err != nil {
		t.Errorf("the sandbox would refuse the spec: %v", err)
	}
	if stdout.String() != "hi\n" {
		t.Errorf("streamed stdout %q", stdout.String())
	}
	if res.Language != "SC" || res.Backend != "fake" || res.SessionID == nil || *res.SessionID != id {
		t.Errorf("language %q backend %q session %v", res.Language, res.Backend, res.SessionID)
	}
	want := LimitsApplied{TimeLimitSeconds: 1.5, MemoryLimitMB: 32, CPULimitCores: 0.25, MaxOutputChars: 500}
	if res.LimitsApplied != want {
		t.Errorf("limits_applied %+v, want %+v", res.LimitsApplied, want)
	}
	if _, err := os.Stat(ws); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("workspace %s left behind: %v", ws, err)
	}
}

func readAll(spec *sandbox.Spec) (string, error) {
	if spec.Stdin == nil {
		return "", errors.New("stdin is nil")
	}
	var b bytes.Buffer
	_, err := b.ReadFrom(spec.Stdin)
	return b.String(), err
}

func TestNoStdinMeansDevNull(t *testing.T) {
	e, fb, _ := newTest(t, sandboxtest.Returns(sandbox.Result{Status: sandbox.StatusOK}))
	if _, err := e.Execute(context.Background(), Request{Language: "script", Code: "x"}); err != nil {
		t.Fatal(err)
	}
	if fb.Specs()[0].Stdin != nil {
		t.Error("stdin set without input; the program must get /dev/null")
	}
	if got := fb.Specs()[0].Limits; got.WallTime != 30*time.Second || got.Memory != 256<<20 || got.Processes != 50 || got.OutputBytes != 100000 || got.CPUs != 0.5 {
		t.Errorf("default limits %+v", got)
	}
}

func TestCompiled(t *testing.T) {
	compile := func(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
		if err := os.WriteFile(filepath.Join(spec.Workspace, "main"), []byte("ELF"), 0o755); err != nil {
			t.Fatal(err)
		}
		return &sandbox.Result{Status: sandbox.StatusOK, WallTime: time.Second, Warnings: []string{"compile warning"}}, nil
	}
	run := func(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
		if err := os.MkdirAll(filepath.Join(spec.Workspace, "out"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(spec.Workspace, "out", "data.csv"), []byte("1,2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return &sandbox.Result{Status: sandbox.StatusOK, Stdout: []byte("ran"), WallTime: 10 * time.Millisecond}, nil
	}
	e, fb, _ := newTest(t, compile, run)
	res, err := e.Execute(context.Background(), Request{Language: "native", Code: "int main", Limits: ExecutionLimits{MemoryLimit: 64, TimeLimit: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if len(fb.Specs()) != 2 {
		t.Fatalf("%d runs, want compile and run", len(fb.Specs()))
	}
	c, r := fb.Specs()[0], fb.Specs()[1]
	if want := []string{"/usr/bin/ncc", "-m512", "-o", "/workspace/main", "/workspace/prog.nc"}; !slices.Equal(c.Args, want) {
		t.Errorf("compile args %q, want %q", c.Args, want)
	}
	if want := []string{"/workspace/main", "--mem=64"}; !slices.Equal(r.Args, want) {
		t.Errorf("run args %q, want %q", r.Args, want)
	}
	if c.Workspace != r.Workspace {
		t.Errorf("compile in %s, run in %s", c.Workspace, r.Workspace)
	}
	if len(c.Files) != 1 || len(r.Files) != 0 {
		t.Errorf("files: compile %d, run %d; want the source once", len(c.Files), len(r.Files))
	}
	if !slices.Equal(fb.Calls()[1].Workspace, []string{"main", "prog.nc"}) {
		t.Errorf("workspace at run start %v", fb.Calls()[1].Workspace)
	}
	cl := c.Limits
	if cl.WallTime != 30*time.Second || cl.Memory != 512<<20 || cl.Processes != 256 {
		t.Errorf("compile limits %+v", cl)
	}
	if r.Limits.WallTime != 3*time.Second || r.Limits.Memory != 64<<20 {
		t.Errorf("run limits %+v", r.Limits)
	}
	if res.Status != StatusSuccess || res.Stdout != "ran" || res.ExecutionTime != 0.01 {
		t.Errorf("result %+v", res)
	}
	if len(res.Artifacts) != 1 || res.Artifacts[0].Path != "out/data.csv" {
		t.Errorf("artifacts %+v, want only out/data.csv (not the source or the binary)", res.Artifacts)
	}
	if !slices.Contains(res.Warnings, "compile warning") {
		t.Errorf("warnings %v lack the compile step's", res.Warnings)
	}
}

func TestSandboxLimitsOption(t *testing.T) {
	fb := &sandboxtest.Fake{T: t, HostWorkspace: true, Steps: []sandboxtest.Step{
		sandboxtest.Returns(sandbox.Result{Status: sandbox.StatusOK}),
		sandboxtest.Returns(sandbox.Result{Status: sandbox.StatusOK}),
	}}
	e := New(fb, testTable(t), Options{
		TempDir:       t.TempDir(),
		SandboxLimits: sandbox.Limits{OpenFiles: 64, FileSize: 1 << 20, WorkspaceSize: 8 << 20, TmpSize: 4 << 20, Memory: 1},
		CompileLimits: sandbox.Limits{WallTime: 5 * time.Second, Memory: 100 << 20},
	})
	if _, err := e.Execute(context.Background(), Request{Language: "native", Code: "x", Limits: ExecutionLimits{MemoryLimit: 20}}); err != nil {
		t.Fatal(err)
	}
	c, r := fb.Specs()[0].Limits, fb.Specs()[1].Limits
	if c.WallTime != 5*time.Second || c.CPUTime != 30*time.Second || c.Memory != 100<<20 || c.WorkspaceSize != 8<<20 || c.OpenFiles != 1024 {
		t.Errorf("compile limits %+v", c)
	}
	if r.OpenFiles != 64 || r.FileSize != 1<<20 || r.WorkspaceSize != 8<<20 || r.TmpSize != 4<<20 || r.Memory != 20<<20 {
		t.Errorf("run limits %+v", r)
	}
}

func TestCompileFailure(t *testing.T) {
	tests := []struct {
		name string
		res  sandbox.Result
		exit int
		msg  string
	}{
		{"error", sandbox.Result{Status: sandbox.StatusNonzeroExit, ExitCode: 1, Stdout: []byte("note"), Stderr: []byte("prog.nc:1: error\n")},
			1, "compilation failed"},
		{"timeout", sandbox.Result{Status: sandbox.StatusTimeLimit, Signal: syscall.SIGKILL, Stderr: []byte("slow\n")},
			ExitTimeout, "compilation failed: timed out after 30 seconds"},
		{"memory", sandbox.Result{Status: sandbox.StatusMemoryLimit, Signal: syscall.SIGKILL, MemoryExceeded: true, Stderr: []byte("big\n")},
			137, "compilation failed: memory limit of 512 MB exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, fb, _ := newTest(t, sandboxtest.Returns(tt.res))
			var stderr bytes.Buffer
			res, err := e.Execute(context.Background(), Request{Language: "native", Code: "bad", Stderr: &stderr})
			if err != nil {
				t.Fatal(err)
			}
			if len(fb.Specs()) != 1 {
				t.Errorf("%d runs after a failed compilation, want 1", len(fb.Specs()))
			}
			if res.Status != StatusExecutionError || res.Message() != tt.msg || res.ExitCode != tt.exit {
				t.Errorf("status %s message %q exit %d, want execution_error %q %d", res.Status, res.Message(), res.ExitCode, tt.msg, tt.exit)
			}
			want := string(tt.res.Stderr)
			if len(tt.res.Stdout) > 0 {
				want = string(tt.res.Stdout) + "\n" + want
			}
			if res.Stderr != want || stderr.String() != want {
				t.Errorf("stderr %q, streamed %q, want the compiler output %q", res.Stderr, stderr.String(), want)
			}
			if res.Stdout != "" || res.Stage != StageCompile {
				t.Errorf("stdout %q stage %q", res.Stdout, res.Stage)
			}
			if res.MemoryExceeded != (tt.res.Status == sandbox.StatusMemoryLimit) {
				t.Errorf("memory_exceeded %v", res.MemoryExceeded)
			}
		})
	}
}

func TestSetupErrors(t *testing.T) {
	failing := func(context.Context, *sandbox.Spec) (*sandbox.Result, error) {
		return nil, errors.New("pivot_root: permission denied")
	}
	tests := []struct {
		name  string
		req   Request
		steps []sandboxtest.Step
		msg   string
	}{
		{"backend error", Request{Language: "script", Code: "x"}, []sandboxtest.Step{failing}, "pivot_root: permission denied"},
		{"compile step error", Request{Language: "native", Code: "x"}, []sandboxtest.Step{failing}, "compile step: pivot_root"},
		{"toolchain missing", Request{Language: "ghost", Code: "x"}, nil, "the ghost toolchain is not available here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _, _ := newTest(t, tt.steps...)
			res, err := e.Execute(context.Background(), tt.req)
			if err != nil {
				t.Fatalf("a failing sandbox is a result, not an error: %v", err)
			}
			if res.Status != StatusSetupError || res.ExitCode != -1 {
				t.Errorf("status %s exit %d, want setup_error -1", res.Status, res.ExitCode)
			}
			if !strings.Contains(res.Message(), tt.msg) {
				t.Errorf("message %q does not contain %q", res.Message(), tt.msg)
			}
			if res.Backend != "fake" || res.LimitsApplied.TimeLimitSeconds != 30 {
				t.Errorf("result lacks backend or limits: %+v", res)
			}
		})
	}
}

func TestRefusedRequests(t *testing.T) {
	bad := "no/slashes"
	long := strings.Repeat("a", 65)
	sid := "nb"
	tests := []struct {
		name string
		req  Request
		want error
	}{
		{"empty code", Request{Language: "script"}, ErrEmptyCode},
		{"blank code", Request{Language: "script", Code: " \n\t"}, ErrEmptyCode},
		{"code too large", Request{Language: "script", Code: strings.Repeat("x", MaxCodeBytes+1)}, ErrCodeTooLarge},
		{"stdin too large", Request{Language: "script", Code: "x", Stdin: strings.Repeat("x", MaxStdinBytes+1)}, ErrStdinTooLarge},
		{"session id with slash", Request{Language: "script", Code: "x", SessionID: &bad}, ErrInvalidSessionID},
		{"session id too long", Request{Language: "script", Code: "x", SessionID: &long}, ErrInvalidSessionID},
		{"invalid limits", Request{Language: "script", Code: "x", Limits: ExecutionLimits{TimeLimit: 301}}, ErrInvalidLimits},
		{"negative memory", Request{Language: "script", Code: "x", Limits: ExecutionLimits{MemoryLimit: -5}}, ErrInvalidLimits},
		{"unknown language", Request{Language: "cobol", Code: "x"}, lang.ErrUnknownLanguage},
		// A cell runs in the interpreter a session store keeps, never as
		// a program run once.
		{"interpreter mode", Request{Language: "script", Code: "x", SessionID: &sid, Mode: ModeInterpreter}, ErrInvalidMode},
		{"unknown mode", Request{Language: "script", Code: "x", Mode: "notebook"}, ErrInvalidMode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, fb, _ := newTest(t)
			res, err := e.Execute(context.Background(), tt.req)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Execute() = %v, %v; want %v", res, err, tt.want)
			}
			if tt.req.Mode != "" {
				ws := t.TempDir()
				req := tt.req
				req.Workspace = ws
				if _, err := e.RunProcess(context.Background(), req, ProcessLimits{Wall: time.Second, CPU: time.Second, Output: 1}); !errors.Is(err, tt.want) {
					t.Fatalf("RunProcess() = %v; want %v", err, tt.want)
				}
			}
			if len(fb.Specs()) != 0 {
				t.Error("a refused request reached the sandbox")
			}
		})
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e, _, _ := newTest(t, func(context.Context, *sandbox.Spec) (*sandbox.Result, error) {
		cancel()
		return &sandbox.Result{Status: sandbox.StatusSignaled, Signal: syscall.SIGKILL}, nil
	})
	if _, err := e.Execute(ctx, Request{Language: "script", Code: "x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Execute() after cancellation = %v, want context.Canceled", err)
	}
}

func TestValidateSessionID(t *testing.T) {
	for _, id := range []string{"a", "A-b_9", strings.Repeat("z", 64)} {
		if err := ValidateSessionID(id); err != nil {
			t.Errorf("ValidateSessionID(%q) = %v", id, err)
		}
	}
	for _, id := range []string{"", "..", "a/b", "a b", "é", strings.Repeat("z", 65), "x\n"} {
		if err := ValidateSessionID(id); !errors.Is(err, ErrInvalidSessionID) {
			t.Errorf("ValidateSessionID(%q) = %v, want ErrInvalidSessionID", id, err)
		}
	}
}

func TestSetupErrorResult(t *testing.T) {
	id := "s"
	res := SetupErrorResult(Request{Language: "py", SessionID: &id, Limits: ExecutionLimits{MemoryLimit: 64}}, "auto", errors.New("no backend"))
	if res.Status != StatusSetupError || res.ExitCode != -1 || res.Message() != "sandbox failed: no backend" {
		t.Errorf("result %+v", res)
	}
	if res.Language != "py" || res.Backend != "auto" || *res.SessionID != "s" || res.LimitsApplied.MemoryLimitMB != 64 || res.LimitsApplied.TimeLimitSeconds != 30 {
		t.Errorf("result %+v", res)
	}
}

func FuzzValidateSessionID(f *testing.F) {
	for _, s := range []string{"abc", "../x", "a/b", "", strings.Repeat("a", 65), "ok_-9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if ValidateSessionID(id) != nil {
			return
		}
		// An accepted id is always a single, plain path element.
		if id == "" || len(id) > 64 || strings.ContainsAny(id, "/.\\\x00 ") {
			t.Errorf("ValidateSessionID accepted %q", id)
		}
	})
}

// TestNotUTF8Warned: output that a JSON string cannot hold as it is gets
// a warning naming its stream; UTF-8 output gets none.
func TestNotUTF8Warned(t *testing.T) {
	for _, tc := range []struct {
		name           string
		stdout, stderr string
		want           []string
	}{
		{"utf-8", "héllo €\n", "", nil},
		{"stdout", "ok \xff\n", "fine", []string{"stdout is not valid UTF-8: in JSON each byte that is not shows as U+FFFD"}},
		{"both, one cut inside a character", "\xe2\x82", "\xc3", []string{
			"stdout is not valid UTF-8: in JSON each byte that is not shows as U+FFFD",
			"stderr is not valid UTF-8: in JSON each byte that is not shows as U+FFFD"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, _ := newTest(t, sandboxtest.Returns(sandbox.Result{Status: sandbox.StatusOK,
				Stdout: []byte(tc.stdout), Stderr: []byte(tc.stderr)}))
			res, err := e.Execute(context.Background(), Request{Language: "script", Code: "x"})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Warnings, tc.want) || res.Stdout != tc.stdout {
				t.Errorf("warnings %q stdout %q, want %q and the bytes as they are", res.Warnings, res.Stdout, tc.want)
			}
		})
	}
}
