package coderunner

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/assembly"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

func noEnv(string) (string, bool) { return "", false }

// newRunner returns a CodeRunner on the native backend, or skips (fails
// under CI) when it cannot work here.
func newRunner(t *testing.T) *CodeRunner {
	t.Helper()
	c, err := New(context.Background(), Options{
		Backend:    "native",
		LookupEnv:  noEnv,
		SessionDir: filepath.Join(t.TempDir(), "sessions"),
		CacheDir:   testutil.ReachableDir(t, "coderunner-test-cache-"),
	})
	testutil.Require(t, err == nil, "the native backend does not work here")
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// requireLang skips when a language's toolchain is missing.
func requireLang(t *testing.T, c *CodeRunner, id string) {
	t.Helper()
	l, err := c.parts.Languages.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	tc := l.Discover(context.Background())
	testutil.Require(t, tc.Available, id+" toolchain: "+tc.Reason)
}

// newFake returns a CodeRunner on a fake backend.
func newFake(t *testing.T, f *sandboxtest.Fake) *CodeRunner {
	t.Helper()
	c, err := New(context.Background(), Options{
		Sandbox:    f,
		LookupEnv:  noEnv,
		SessionDir: filepath.Join(t.TempDir(), "sessions"),
		CacheDir:   t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestStatuses(t *testing.T) {
	c := newRunner(t)
	requireLang(t, c, "python")
	tests := []struct {
		name     string
		code     string
		limits   ExecutionLimits
		status   Status
		exitCode int
		message  string
		stdout   string
	}{
		{"success", "print('Hello, World!')", ExecutionLimits{}, StatusSuccess, 0, "", "Hello, World!\n"},
		{"timeout", "import time\nprint('partial', flush=True)\ntime.sleep(30)", ExecutionLimits{TimeLimit: 1}, StatusTimeout, 124,
			"Execution timed out after 1 seconds.", "partial\n"},
		{"execution error", "import sys\nsys.exit(3)", ExecutionLimits{}, StatusExecutionError, 3, "Process exited with code 3.", ""},
		{"exception", "raise ValueError('boom')", ExecutionLimits{}, StatusExecutionError, 1, "Process exited with code 1.", ""},
		{"memory", "x = bytearray(200 << 20)", ExecutionLimits{MemoryLimit: 64}, StatusExecutionError, 137, "Memory limit of 64 MB exceeded.", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.ExecuteWithLimits(context.Background(), "python", tt.code, tt.limits)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tt.status || res.ExitCode != tt.exitCode || res.Message() != tt.message || res.Stdout != tt.stdout {
				t.Errorf("got status %s, exit %d, message %q, stdout %q; want %s, %d, %q, %q (stderr %q)",
					res.Status, res.ExitCode, res.Message(), res.Stdout, tt.status, tt.exitCode, tt.message, tt.stdout, res.Stderr)
			}
			if tt.status == StatusSuccess && res.ErrorMessage != nil {
				t.Errorf("error_message %q on success, want null", *res.ErrorMessage)
			}
		})
	}
}

func TestExecuteCodeOptions(t *testing.T) {
	c := newRunner(t)
	requireLang(t, c, "python")
	res, err := c.ExecuteCode(context.Background(), "py", "print(input()[::-1])", WithStdin("olleh\n"), WithTimeout(5e9))
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "hello\n" || res.LimitsApplied.TimeLimitSeconds != 5 || res.Language != "py" {
		t.Errorf("stdout %q, time limit %g, language %q", res.Stdout, res.LimitsApplied.TimeLimitSeconds, res.Language)
	}
	if res.LimitsApplied.MemoryLimitMB != 256 || res.LimitsApplied.CPULimitCores != 0.5 || res.LimitsApplied.MaxOutputChars != 100000 {
		t.Errorf("limits applied %+v, want the default limits", res.LimitsApplied)
	}
}

// The program's arguments and variables reach it on the native backend;
// C compiled with -DX=3 prints 3.
func TestProgramOptionsNative(t *testing.T) {
	c := newRunner(t)
	requireLang(t, c, "python")
	res, err := c.ExecuteCode(context.Background(), "python", "import os, sys\nprint(sys.argv[1:], os.environ['GREETING'])\n",
		WithArgs("one", "two words"), WithEnv(map[string]string{"GREETING": "hi"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusSuccess || res.Stdout != "['one', 'two words'] hi\n" {
		t.Errorf("python: %s, stdout %q, stderr %q", res.Status, res.Stdout, res.Stderr)
	}
	requireLang(t, c, "c")
	res, err = c.ExecuteCode(context.Background(), "c", "#include <stdio.h>\nint main(int c, char **v) { printf(\"%d %s\\n\", X, v[1]); return 0; }\n",
		WithCompilerFlags("-DX=3", "-O0"), WithArgs("arg"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusSuccess || res.Stdout != "3 arg\n" {
		t.Errorf("c: %s, stdout %q, stderr %q", res.Status, res.Stdout, res.Stderr)
	}
}

// allOptionsFiles is a C program of two files: X, which only -DX=N
// defines, is read in the file that is not the entry, and the entry
// prints it with the program's arguments and a variable of its
// environment.
var allOptionsFiles = []File{
	{Path: "main.c", Content: "#include <stdio.h>\n#include <stdlib.h>\n#include \"lib/x.h\"\n" +
		"int main(int argc, char **argv) {\n" +
		"\tprintf(\"x=%d argc=%d\", x(), argc);\n" +
		"\tfor (int i = 1; i < argc; i++) printf(\" [%s]\", argv[i]);\n" +
		"\tconst char *g = getenv(\"GREETING\");\n" +
		"\tprintf(\" GREETING=%s\\n\", g ? g : \"(unset)\");\n" +
		"\treturn 0;\n}\n"},
	{Path: "lib/x.h", Content: "int x(void);\n"},
	{Path: "lib/x.c", Content: "#include \"x.h\"\nint x(void) { return X; }\n"},
}

// One request carries files, entry, args, compiler_flags and env at once,
// on the native backend: the single run and the judge, whose compile cache
// tells programs apart by their flags as well as by their files.
func TestAllProgramOptionsNative(t *testing.T) {
	c := newRunner(t)
	requireLang(t, c, "c")
	ctx := context.Background()
	res, err := c.ExecuteCode(ctx, "c", "", WithFiles(allOptionsFiles...), WithEntry("main.c"),
		WithCompilerFlags("-DX=3", "-O0"), WithArgs("one", "two words"), WithEnv(map[string]string{"GREETING": "hi there"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := "x=3 argc=3 [one] [two words] GREETING=hi there\n"; res.Status != StatusSuccess || res.Stdout != want {
		t.Fatalf("run: %s, stdout %q, want %q; stderr %q", res.Status, res.Stdout, want, res.Stderr)
	}

	judgeX := func(flag, want string, files []File) *ExecutionResult {
		t.Helper()
		res := c.Execute(ctx, ExecutionRequest{
			Language: "c", Files: files, Entry: "main.c",
			CompilerFlags: []string{flag}, Args: []string{"a"}, Env: map[string]string{"GREETING": "judged"},
			TestCases: []TestCase{{ID: "t", ExpectedOutput: want}},
		})
		return &res
	}
	for _, tt := range []struct{ flag, want string }{
		{"-DX=3", "x=3 argc=2 [a] GREETING=judged\n"},
		// The same files with another flag: compiled again, not taken
		// from the cache.
		{"-DX=4", "x=4 argc=2 [a] GREETING=judged\n"},
	} {
		if res := judgeX(tt.flag, tt.want, allOptionsFiles); res.Status != judge.StatusAllPassed {
			t.Errorf("judge %s: %s %+v", tt.flag, res.Status, res.TestResults)
		}
	}
	// The same flag with another file that is not the entry: compiled
	// again too.
	other := slices.Clone(allOptionsFiles)
	other[2].Content = "#include \"x.h\"\nint x(void) { return X * 10; }\n"
	if res := judgeX("-DX=3", "x=30 argc=2 [a] GREETING=judged\n", other); res.Status != judge.StatusAllPassed {
		t.Errorf("judge with another lib/x.c: %s %+v", res.Status, res.TestResults)
	}

	// A refused option is refused with files as without.
	_, err = c.ExecuteCode(ctx, "c", "", WithFiles(allOptionsFiles...), WithEntry("main.c"), WithCompilerFlags("-B/tmp"))
	if !errors.Is(err, ErrInvalidOption) {
		t.Errorf("-B/tmp with files: error %v, want ErrInvalidOption", err)
	}
	_, err = c.ExecuteCode(ctx, "c", "", WithFiles(allOptionsFiles...), WithEntry("lib/x.h"), WithCompilerFlags("-DX=3"))
	if !errors.Is(err, ErrInvalidFiles) {
		t.Errorf("a header as the entry with flags: error %v, want ErrInvalidFiles", err)
	}
}

func TestSetupError(t *testing.T) {
	c := newFake(t, &sandboxtest.Fake{T: t, Steps: []sandboxtest.Step{sandboxtest.Fails(errors.New("cgroup vanished"))}})
	res, err := c.ExecuteCode(context.Background(), "bash", "echo hi")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusSetupError || res.ExitCode != -1 || !strings.Contains(res.Message(), "cgroup vanished") {
		t.Errorf("got %s, exit %d, message %q", res.Status, res.ExitCode, res.Message())
	}
}

func TestRefusals(t *testing.T) {
	c := newFake(t, &sandboxtest.Fake{T: t}) // no run is expected
	bad := "../etc"
	tests := []struct {
		name     string
		language string
		code     string
		limits   ExecutionLimits
		opts     []Option
		is       error
		message  string
	}{
		{"unsupported language", "ruby", "puts 1", ExecutionLimits{}, nil, ErrUnsupportedLanguage,
			"Unsupported language: ruby. Supported languages: bash, c, cpp, go, java, javascript, python, python3, rust."},
		{"empty code", "python", "  \n", ExecutionLimits{}, nil, ErrEmptyCode, "Code must be a non-empty string."},
		{"memory", "python", "print(1)", ExecutionLimits{MemoryLimit: 8}, nil, ErrInvalidLimits,
			"invalid execution limits: memory_limit 8 must be between 16 and 8192 MB"},
		{"timeout", "python", "print(1)", ExecutionLimits{}, []Option{WithTimeout(301e9)}, ErrInvalidLimits,
			"invalid execution limits: time_limit 301 must be between 1 and 300 seconds"},
		{"session", "python", "print(1)", ExecutionLimits{}, []Option{WithSession(bad)}, ErrInvalidSessionID,
			`invalid session_id "../etc": it must be 1 to 64 letters, digits, '_' or '-'`},
		{"compiler flag", "c", "int main(){}", ExecutionLimits{}, []Option{WithCompilerFlags("-O2", "-B/tmp")}, ErrInvalidOption,
			`compiler_flags[1]: "-B/tmp" is refused: it could make the compiler read or write files or run other programs`},
		{"flag for python", "python", "print(1)", ExecutionLimits{}, []Option{WithCompilerFlags("-O2")}, ErrInvalidOption,
			"compiler_flags: python has no compile step: it takes no compiler flags"},
		{"LD_PRELOAD", "python", "print(1)", ExecutionLimits{}, []Option{WithEnv(map[string]string{"LD_PRELOAD": "/workspace/x.so"})}, ErrInvalidOption,
			"env.LD_PRELOAD: names starting with LD_ are refused"},
		{"NUL argument", "python", "print(1)", ExecutionLimits{}, []Option{WithArgs("a\x00")}, ErrInvalidOption,
			"args[0]: contains a NUL byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.ExecuteWithLimits(context.Background(), tt.language, tt.code, tt.limits, tt.opts...)
			if !errors.Is(err, tt.is) {
				t.Errorf("error %v, want %v", err, tt.is)
			}
			if res == nil {
				t.Fatal("nil result")
			}
			if res.Status != StatusSetupError || res.ExitCode != -1 || res.Message() != tt.message {
				t.Errorf("got %s, exit %d, message %q; want setup_error, -1, %q", res.Status, res.ExitCode, res.Message(), tt.message)
			}
		})
	}
}

func TestBackendUnavailable(t *testing.T) {
	res, err := unavailable("python", errors.New("native: no user namespaces"), nil)
	if !errors.Is(err, ErrBackendUnavailable) {
		t.Errorf("error %v, want ErrBackendUnavailable", err)
	}
	want := "No sandbox backend is available on this system: no sandbox backend is available: native: no user namespaces"
	if res.Status != StatusSetupError || res.Message() != want {
		t.Errorf("got %s %q, want setup_error %q", res.Status, res.Message(), want)
	}
	_, err = New(context.Background(), Options{Backend: "nonesuch", LookupEnv: noEnv})
	if !errors.Is(err, ErrBackendUnavailable) {
		t.Errorf("New with an unknown backend: %v, want ErrBackendUnavailable", err)
	}
}

func TestLimitsValidate(t *testing.T) {
	tests := []struct {
		edit func(*ExecutionLimits)
		want string
	}{
		{func(l *ExecutionLimits) {}, ""},
		{func(l *ExecutionLimits) { l.TimeLimit = 0.5 }, "invalid execution limits: time_limit 0.5 must be between 1 and 300 seconds"},
		{func(l *ExecutionLimits) { l.TimeLimit = 301 }, "invalid execution limits: time_limit 301 must be between 1 and 300 seconds"},
		{func(l *ExecutionLimits) { l.MemoryLimit = 15 }, "invalid execution limits: memory_limit 15 must be between 16 and 8192 MB"},
		{func(l *ExecutionLimits) { l.CPULimit = -1 }, "invalid execution limits: cpu_limit -1 must be more than 0"},
		{func(l *ExecutionLimits) { l.MaxOutputChars = -5 }, "invalid execution limits: max_output_chars -5 must be between 1 and 10000000"},
		{func(l *ExecutionLimits) { l.Pids = 5000 }, "invalid execution limits: pids 5000 must be between 1 and 1024"},
	}
	for _, tt := range tests {
		l := DefaultLimits()
		tt.edit(&l)
		err := l.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", l, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want) || !errors.Is(err, ErrInvalidLimits)):
			t.Errorf("%+v: %v, want %q", l, err, tt.want)
		}
	}
}

func TestMemoryFigures(t *testing.T) {
	c := newRunner(t)
	requireLang(t, c, "python")
	code := "import time\nx = bytearray(100 << 20)\nfor i in range(0, len(x), 4096):\n    x[i] = 1\ntime.sleep(0.3)\nprint('ok')"
	res, err := c.ExecuteWithLimits(context.Background(), "python", code, ExecutionLimits{MemoryLimit: 256})
	if err != nil {
		t.Fatal(err)
	}
	u := res.ResourceUsage
	if res.Status != StatusSuccess {
		t.Fatalf("status %s: %s %s", res.Status, res.Message(), res.Stderr)
	}
	if u.MemoryPeakMB <= 100 || u.MemoryPeakMB >= 256 {
		t.Errorf("memory peak %g MB, want above 100 and below the 256 MB limit", u.MemoryPeakMB)
	}
	if u.MemoryStartMB > u.MemoryPeakMB || u.CPUSamples < 2 {
		t.Errorf("start %g MB, peak %g MB, %d samples: want start ≤ peak and samples taken while it ran", u.MemoryStartMB, u.MemoryPeakMB, u.CPUSamples)
	}
	if u.CPUAveragePercent <= 0 || u.CPUPeakPercent < u.CPUAveragePercent || u.CPUTimeSeconds <= 0 {
		t.Errorf("CPU average %g%%, peak %g%%, time %gs", u.CPUAveragePercent, u.CPUPeakPercent, u.CPUTimeSeconds)
	}
}

func TestSessions(t *testing.T) {
	c := newRunner(t)
	requireLang(t, c, "python")
	ctx := context.Background()
	run := func(id, code string) *Result {
		t.Helper()
		res, err := c.ExecuteCode(ctx, "python", code, WithSession(id))
		if err != nil {
			t.Fatal(err)
		}
		if res.SessionID == nil || *res.SessionID != id {
			t.Errorf("session_id %v, want %q", res.SessionID, id)
		}
		return res
	}
	w := run("agent-1", "open('notes.txt', 'w').write('remember me')\nopen('/tmp/scratch', 'w').write('x')")
	if w.Status != StatusSuccess {
		t.Fatalf("write: %s %s", w.Message(), w.Stderr)
	}
	if !slices.ContainsFunc(w.Artifacts, func(a Artifact) bool { return a.Path == "notes.txt" }) {
		t.Errorf("artifacts %v, want notes.txt", w.Artifacts)
	}
	read := "import os\nprint(open('notes.txt').read(), os.path.exists('/tmp/scratch'))"
	if got := run("agent-1", read).Stdout; got != "remember me False\n" {
		t.Errorf("next call of the session: stdout %q, want the file kept and /tmp fresh", got)
	}
	if got := run("agent-2", "import os\nprint(os.listdir('.'))").Stdout; strings.Contains(got, "notes.txt") {
		t.Errorf("another session sees the file: %s", got)
	}
	if got, _ := c.ExecuteCode(ctx, "python", "import os\nprint(os.listdir('.'))"); strings.Contains(got.Stdout, "notes.txt") {
		t.Errorf("a call without session sees the file: %s", got.Stdout)
	}
	// Its idle timeout, set by a call, and what the session looks like.
	if _, err := c.ExecuteCode(ctx, "python", "print(1)", WithSession("agent-1"), WithSessionTTL(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecuteCode(ctx, "python", "print(1)", WithSession("agent-1"), WithSessionTTL(48*time.Hour)); !errors.Is(err, ErrInvalidSessionTTL) {
		t.Errorf("a session TTL over the maximum: %v, want ErrInvalidSessionTTL", err)
	}
	info, err := c.Session("agent-1")
	if err != nil || info.ID != "agent-1" || info.IdleTimeoutSeconds != 7200 || info.DiskUsedBytes <= 0 || !info.ExpiresAt.After(info.LastUsedAt) {
		t.Errorf("Session(agent-1) = %+v, %v", info, err)
	}
	if all := c.Sessions(); len(all) != 2 || all[0].ID != "agent-1" || all[1].ID != "agent-2" {
		t.Errorf("Sessions() = %+v", all)
	}
	if err := c.DeleteSession("agent-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Session("agent-1"); !errors.Is(err, ErrSessionNotFound) || errors.Is(err, ErrSessionExpired) {
		t.Errorf("Session of a deleted session: %v", err)
	}
	if err := c.DeleteSession("agent-1"); !errors.Is(err, ErrSessionNotFound) {
		t.Errorf("second delete: %v, want ErrSessionNotFound", err)
	}
	if got := run("agent-1", "import os\nprint(os.path.exists('notes.txt'))").Stdout; got != "False\n" {
		t.Errorf("a deleted session kept its file: %q", got)
	}
}

func TestSessionCompiled(t *testing.T) {
	c := newRunner(t)
	requireLang(t, c, "c")
	code := "#include <stdio.h>\nint main(void){FILE*f=fopen(\"n\",\"a+\");fputc('x',f);fseek(f,0,SEEK_SET);int n=0;while(fgetc(f)!=EOF)n++;printf(\"%d\\n\",n);return 0;}"
	for want := 1; want <= 2; want++ {
		res, err := c.ExecuteCode(context.Background(), "c", code, WithSession("c-session"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(res.Stdout) != string(rune('0'+want)) {
			t.Errorf("call %d: stdout %q (%s %s)", want, res.Stdout, res.Message(), res.Stderr)
		}
	}
}

func TestSandboxProcessIsolation(t *testing.T) {
	c := newRunner(t)
	requireLang(t, c, "python")
	res, err := c.SandboxProcessIsolation(context.Background(), "python", "import os\nprint(os.getpid())", ExecutionLimits{TimeLimit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Isolation.Isolated || res.Isolation.Backend != "native" || len(res.Isolation.Checks) == 0 {
		t.Errorf("isolation %+v", res.Isolation)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"stdout", "status", "resource_usage", "limits_applied", "isolation"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
	var back IsolatedResult
	if err := json.Unmarshal(b, &back); err != nil || back.Result == nil || back.Stdout != res.Stdout ||
		back.Isolation.Backend != "native" || len(back.Isolation.Checks) != len(res.Isolation.Checks) {
		t.Errorf("read back: %v %+v", err, back)
	}
}

// TestCheckDockerAvailable points DOCKER_HOST at a fake engine that only
// answers pings (no image, no container can run): the engine answers, so
// Docker is available; at a socket nobody listens on, it is not.
func TestCheckDockerAvailable(t *testing.T) {
	dir := t.TempDir()
	answering := filepath.Join(dir, "engine.sock")
	l, err := net.Listen("unix", answering)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/_ping") {
			http.Error(w, `{"message":"not a real engine"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Api-Version", "1.41")
		_, _ = io.WriteString(w, "OK")
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	for _, tc := range []struct {
		name, host string
		want       bool
	}{
		{"answering engine without images", "unix://" + answering, true},
		{"no engine", "unix://" + filepath.Join(dir, "nobody.sock"), false},
		{"engine refusing pings", "tcp://127.0.0.1:1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("DOCKER_HOST", tc.host)
			if got := CheckDockerAvailable(context.Background()); got != tc.want {
				t.Errorf("CheckDockerAvailable with DOCKER_HOST=%s: %v, want %v", tc.host, got, tc.want)
			}
		})
	}
}

// TestCheckDockerAvailableEngine asks the machine's engine, which CI starts.
func TestCheckDockerAvailableEngine(t *testing.T) {
	testutil.Require(t, CheckDockerAvailable(context.Background()), "the Docker engine does not answer (scripts/start-dockerd.sh)")
}

func TestJudge(t *testing.T) {
	c := newRunner(t)
	requireLang(t, c, "python")
	req := ExecutionRequest{
		RequestID: "r1", Language: "python", Code: "print(int(input()) * 2)",
		TestCases: []TestCase{{ID: "a", Input: "2\n", ExpectedOutput: "4\n"}, {ID: "b", Input: "5\n", ExpectedOutput: "11\n"}},
	}
	res := c.Execute(context.Background(), req)
	if res.Status != judge.StatusSomePassed || len(res.TestResults) != 2 || res.TestResults[1].Status != judge.TestWrongAnswer {
		t.Errorf("result %+v", res)
	}
}

func TestJudgeWithoutEngine(t *testing.T) {
	c := newFake(t, &sandboxtest.Fake{T: t})
	c.judge = judge.New(assembly.BrokenEngine{Err: errors.New("no cache directory")}, judge.Options{})
	res := c.Execute(context.Background(), ExecutionRequest{Language: "python", Code: "print(1)", TestCases: []TestCase{{Input: "", ExpectedOutput: "1"}}})
	if res.Status != judge.StatusSandboxError || res.ErrorInfo == nil || !strings.Contains(res.ErrorInfo.Message, "no cache directory") {
		t.Errorf("result %+v", res)
	}
}

func TestFleetWrappers(t *testing.T) {
	req, err := ArtifactToExecutionRequest(FleetArtifact{ArtifactType: "code", InlineContent: "print(1)", Metadata: map[string]any{"language": "Python"}},
		[]map[string]any{{"input": "", "expected": "1"}}, FleetRequestOptions{RequestID: "x"})
	if err != nil || req.Language != "python" || len(req.TestCases) != 1 || req.TestCases[0].ExpectedOutput != "1" {
		t.Fatalf("request %+v, %v", req, err)
	}
	a, large := ExecutionResultToArtifact(ExecutionResult{RequestID: "x", Status: judge.StatusAllPassed, TestResults: []TestResult{}}, "k")
	if a.ArtifactType != "test_result" || a.InlineContent == "" || large != "" {
		t.Errorf("artifact %+v, large %q", a, large)
	}
}

// TestSessionsWarm checks sessions with warm sandboxes, which were started
// before a session's workspace existed.
func TestSessionsWarm(t *testing.T) {
	c, err := New(context.Background(), Options{Backend: "native", Warm: 1, LookupEnv: noEnv, CacheDir: testutil.ReachableDir(t, "coderunner-test-cache-"),
		SessionDir: filepath.Join(t.TempDir(), "sessions")})
	testutil.Require(t, err == nil, "the native backend does not work here")
	defer c.Close()
	requireLang(t, c, "bash")
	for i, want := range []string{"1\n", "2\n", "3\n"} {
		res, err := c.ExecuteCode(context.Background(), "bash", "echo x >> f; wc -l < f", WithSession("warm"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Stdout != want {
			t.Errorf("call %d: stdout %q, want %q (%s %s)", i, res.Stdout, want, res.Status, res.Message())
		}
	}
}

// TestSessionsWarmCapped attacks a session's workspace with warm
// sandboxes (as serve and mcp run): the workspace cap must hold while the
// program writes, not be found out after the call.
func TestSessionsWarmCapped(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "CODERUNNER_BACKEND_WORKSPACE_SIZE_MB" {
			return "8", true
		}
		return "", false
	}
	c, err := New(context.Background(), Options{Backend: "native", Warm: 1, LookupEnv: env, CacheDir: testutil.ReachableDir(t, "coderunner-test-cache-"),
		SessionDir: filepath.Join(t.TempDir(), "sessions")})
	testutil.Require(t, err == nil, "the native backend does not work here")
	defer c.Close()
	requireLang(t, c, "bash")
	res, err := c.ExecuteCode(context.Background(), "bash", "head -c 33554432 /dev/zero > big; echo rc=$?", WithSession("capped"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Stderr, "No space left") || !strings.Contains(res.Stdout, "rc=1") {
		t.Fatalf("writing 32 MiB in an 8 MiB session workspace: %s %q %q", res.Status, res.Stdout, res.Stderr)
	}
}

// TestSessionFiles: a file written through the Go API is the next call's
// to read and append to; what the call wrote comes back.
func TestSessionFiles(t *testing.T) {
	c := newRunner(t)
	requireLang(t, c, "python")
	ctx := context.Background()
	if _, err := c.OpenSessionFile(ctx, "files", "in.txt"); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("OpenSessionFile of a new session: %v", err)
	}
	f, err := c.WriteSessionFile(ctx, "files", "in.txt", strings.NewReader("21\n"))
	if err != nil || f.Size != 3 {
		t.Fatalf("WriteSessionFile = %+v, %v", f, err)
	}
	res, err := c.ExecuteCode(ctx, "python", "n = int(open('in.txt').read())\nopen('in.txt', 'a').write('x\\n')\nopen('out.txt', 'w').write(str(2 * n))",
		WithSession("files"))
	if err != nil || res.Status != StatusSuccess {
		t.Fatalf("the run: %+v, %v", res, err)
	}
	r, err := c.OpenSessionFile(ctx, "files", "out.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	_ = r.Close()
	if string(b) != "42" {
		t.Fatalf("out.txt holds %q", b)
	}
	list, err := c.SessionFiles(ctx, "files")
	// The run's own source (main.py) is there too.
	if err != nil || len(list) != 3 || list[0].Path != "in.txt" || list[0].Size != 5 || list[2].Path != "out.txt" {
		t.Fatalf("SessionFiles = %+v, %v", list, err)
	}
	if _, err := c.WriteSessionFile(ctx, "files", "../escape", strings.NewReader("x")); !errors.Is(err, ErrInvalidPath) {
		t.Fatalf("a path out of the workspace: %v", err)
	}
	if err := c.DeleteSessionFile(ctx, "files", "out.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenSessionFile(ctx, "files", "out.txt"); !errors.Is(err, ErrFileNotFound) {
		t.Fatalf("after DeleteSessionFile: %v", err)
	}
}

// writes records each write it is given.
type writes struct {
	mu  sync.Mutex
	got []string
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, string(p))
	return len(p), nil
}

// TestOutputWriters: WithStdout and WithStderr get the output as the
// program writes it, on the real sandbox: what it printed before a pause
// is a write of its own, before what it printed after.
func TestOutputWriters(t *testing.T) {
	c := newRunner(t)
	requireLang(t, c, "python")
	var out, errw writes
	res, err := c.ExecuteCode(context.Background(), "python",
		"import sys, time\nprint('a', flush=True)\ntime.sleep(0.2)\nprint('b', flush=True)\nsys.stderr.write('e\\n')\n",
		WithStdout(&out), WithStderr(&errw))
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "a\nb\n" || !slices.Equal(out.got, []string{"a\n", "b\n"}) || strings.Join(errw.got, "") != "e\n" {
		t.Errorf("result %q; stdout writes %q, stderr writes %q", res.Stdout, out.got, errw.got)
	}
}

// TestOutputWritersApart: each option sets its own stream only.
func TestOutputWritersApart(t *testing.T) {
	step := sandboxtest.Returns(sandbox.Result{Stdout: []byte("o"), Stderr: []byte("e")})
	f := &sandboxtest.Fake{T: t, Steps: []sandboxtest.Step{step, step}}
	c := newFake(t, f)
	var a, b writes
	if _, err := c.ExecuteCode(context.Background(), "python", "x", WithStderr(&b)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecuteCode(context.Background(), "python", "x", WithStdout(&a)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.got, []string{"o"}) || !slices.Equal(b.got, []string{"e"}) {
		t.Errorf("stdout writer %q, stderr writer %q", a.got, b.got)
	}
}

// TestInterpreterSession is the Go API of the interpreter mode: state
// kept, the last expression's value, restart, and the refusals.
func TestInterpreterSession(t *testing.T) {
	c := newRunner(t)
	requireLang(t, c, "python")
	ctx := context.Background()
	cell := func(code string) *Result {
		t.Helper()
		res, err := c.ExecuteCode(ctx, "python", code, WithSession("nb"), WithInterpreter())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	cell("x = 1")
	cell("x += 1")
	if res := cell("x"); res.Value == nil || *res.Value != "2" || res.Status != StatusSuccess {
		t.Fatalf("x: %+v", res)
	}
	if err := c.RestartInterpreter(ctx, "nb"); err != nil {
		t.Fatal(err)
	}
	if res := cell("'x' in dir()"); res.Value == nil || *res.Value != "False" {
		t.Fatalf("after restart: %+v", res)
	}
	if err := c.RestartInterpreter(ctx, "none"); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("restart of no session: %v", err)
	}
	if _, err := c.ExecuteCode(ctx, "python", "1", WithInterpreter()); !errors.Is(err, ErrInvalidMode) {
		t.Fatalf("no session: %v", err)
	}
	if _, err := c.ExecuteCode(ctx, "python", "1", WithInterpreter(), WithSession("nb"), WithStdin("x")); !errors.Is(err, ErrInvalidMode) {
		t.Fatalf("stdin: %v", err)
	}
}
