package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

func TestRunFlags(t *testing.T) {
	tests := []struct {
		name  string
		args  []string // before the file
		exit  int
		inErr string                           // substring of stderr, for exit 2
		check func(*testing.T, sandbox.Limits) // for exit 0
	}{
		{name: "defaults", exit: 0, check: func(t *testing.T, l sandbox.Limits) {
			if l.WallTime != 30*time.Second || l.CPUTime != 30*time.Second || l.Memory != 256<<20 ||
				l.CPUs != 0.5 || l.Processes != 50 || l.OutputBytes != 100000 || l.OpenFiles != 256 {
				t.Errorf("default limits %+v", l)
			}
		}},
		{name: "timeout duration", args: []string{"--timeout", "45s"}, check: wall(45 * time.Second)},
		{name: "timeout milliseconds", args: []string{"--timeout", "1500ms"}, check: wall(1500 * time.Millisecond)},
		{name: "timeout bare seconds", args: []string{"--timeout", "2"}, check: wall(2 * time.Second)},
		{name: "timeout fractional seconds", args: []string{"--timeout=2.5"}, check: wall(2500 * time.Millisecond)},
		{name: "timeout minutes", args: []string{"-timeout", "5m"}, check: wall(5 * time.Minute)},
		{name: "timeout too short", args: []string{"--timeout", "500ms"}, exit: 2, inErr: "--timeout"},
		{name: "timeout too long", args: []string{"--timeout", "301"}, exit: 2, inErr: "--timeout"},
		{name: "timeout zero", args: []string{"--timeout", "0"}, exit: 2, inErr: "--timeout"},
		{name: "timeout negative", args: []string{"--timeout", "-3s"}, exit: 2, inErr: "--timeout"},
		{name: "timeout garbage", args: []string{"--timeout", "soon"}, exit: 2, inErr: "--timeout"},
		{name: "memory", args: []string{"--memory", "64"}, check: func(t *testing.T, l sandbox.Limits) {
			if l.Memory != 64<<20 {
				t.Errorf("memory %d", l.Memory)
			}
		}},
		{name: "memory too small", args: []string{"--memory", "8"}, exit: 2, inErr: "--memory"},
		{name: "memory not a number", args: []string{"--memory", "lots"}, exit: 2, inErr: "--memory"},
		{name: "cpus", args: []string{"--cpus", "0.25"}, check: func(t *testing.T, l sandbox.Limits) {
			if l.CPUs != 0.25 {
				t.Errorf("cpus %g", l.CPUs)
			}
		}},
		{name: "cpus zero", args: []string{"--cpus", "0"}, exit: 2, inErr: "--cpus"},
		{name: "cpus more than the machine", args: []string{"--cpus", "100000"}, exit: 2, inErr: "--cpus"},
		{name: "pids", args: []string{"--pids", "7"}, check: func(t *testing.T, l sandbox.Limits) {
			if l.Processes != 7 {
				t.Errorf("processes %d", l.Processes)
			}
		}},
		{name: "pids zero", args: []string{"--pids", "0"}, exit: 2, inErr: "--pids"},
		{name: "max output", args: []string{"--max-output", "10"}, check: func(t *testing.T, l sandbox.Limits) {
			if l.OutputBytes != 10 {
				t.Errorf("output bytes %d", l.OutputBytes)
			}
		}},
		{name: "max output negative", args: []string{"--max-output", "-1"}, exit: 2, inErr: "--max-output"},
		{name: "session", args: []string{"--session", "abc_DEF-1"}},
		{name: "session bad", args: []string{"--session", "../x"}, exit: 2, inErr: "--session"},
		{name: "session empty", args: []string{"--session", ""}, exit: 2, inErr: "--session"},
		{name: "backend explicit", args: []string{"--backend", "native"}},
		{name: "backend unknown", args: []string{"--backend", "podman"}, exit: 2, inErr: "--backend"},
		{name: "log level", args: []string{"--log-level", "debug"}},
		{name: "log level bad", args: []string{"--log-level", "loud"}, exit: 2, inErr: "--log-level"},
		{name: "unknown flag", args: []string{"--nope"}, exit: 2, inErr: "--nope"},
		{name: "unknown language", args: []string{"--lang", "cobol"}, exit: 2, inErr: "known: "},
		{name: "language by alias", args: []string{"--lang", "FK"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ta := newApp(t, "")
			file := source(t, "main.fk", "print hi")
			code := ta.run(append(append([]string{"run"}, tt.args...), file)...)
			if code != tt.exit {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.exit, ta.stderr)
			}
			if tt.exit == 2 {
				msg := ta.stderr.String()
				if !strings.Contains(msg, tt.inErr) || strings.Count(strings.TrimSpace(msg), "\n") != 0 {
					t.Errorf("stderr %q: want one line naming %q", msg, tt.inErr)
				}
				if ta.fake.Last() != nil {
					t.Error("a refused run reached the sandbox")
				}
				return
			}
			if ta.stdout.String() != "hi\n" {
				t.Errorf("stdout %q, want the program's", ta.stdout)
			}
			if tt.check != nil {
				tt.check(t, ta.fake.Last().Limits)
			}
		})
	}
}

func wall(d time.Duration) func(*testing.T, sandbox.Limits) {
	return func(t *testing.T, l sandbox.Limits) {
		if l.WallTime != d || l.CPUTime != d {
			t.Errorf("wall %v cpu %v, want %v", l.WallTime, l.CPUTime, d)
		}
	}
}

func TestRunExitStatus(t *testing.T) {
	tests := []struct {
		code   string
		exit   int
		stderr string // substring; "" means stderr must be empty
	}{
		{"print ok", 0, ""},
		{"exit 3", 3, ""},
		{"exit 255", 255, ""},
		{"sleep", 124, "Execution timed out after 30 seconds."},
		{"oom", 137, "Memory limit of 256 MB exceeded."},
		{"segv", 139, "signal 11 (SIGSEGV)"},
		{"flood", 137, "output limit exceeded"},
		{"broken", 125, "unable to pivot_root"},
		{"warn", 0, "coderunner: warning: memory limited by rlimits only"},
		// Output that is not UTF-8 passes through without a word: only
		// its JSON needs one.
		{"print \xff\xfe", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			ta := newApp(t, "")
			got := ta.run("run", source(t, "main.fk", tt.code))
			if got != tt.exit {
				t.Errorf("exit %d, want %d (stderr %q)", got, tt.exit, ta.stderr)
			}
			if tt.stderr == "" && ta.stderr.Len() != 0 {
				t.Errorf("stderr %q, want nothing", ta.stderr)
			}
			if !strings.Contains(ta.stderr.String(), tt.stderr) {
				t.Errorf("stderr %q lacks %q", ta.stderr, tt.stderr)
			}
		})
	}
}

func TestRunCompiled(t *testing.T) {
	ta := newApp(t, "")
	if code := ta.run("run", source(t, "x.fkc", "print compiled")); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, ta.stderr)
	}
	if ta.stdout.String() != "compiled\n" {
		t.Errorf("stdout %q", ta.stdout)
	}

	ta = newApp(t, "")
	if code := ta.run("run", source(t, "x.fkc", "syntax error")); code != 1 {
		t.Errorf("exit %d after a compile error, want 1", code)
	}
	want := "main.fkc:1: syntax error\ncoderunner: compilation failed\n"
	if ta.stderr.String() != want {
		t.Errorf("stderr %q, want %q", ta.stderr, want)
	}
}

func TestRunJSON(t *testing.T) {
	tests := []struct {
		code   string
		exit   int
		status string
	}{
		{"print hi", 0, "success"},
		{"exit 4", 0, "execution_error"},
		{"sleep", 0, "timeout"},
		{"oom", 0, "execution_error"},
		{"broken", 125, "setup_error"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			ta := newApp(t, "")
			got := ta.run("run", source(t, "main.fk", tt.code), "--json", "--session", "s-1")
			if got != tt.exit {
				t.Errorf("exit %d, want %d (stderr %q)", got, tt.exit, ta.stderr)
			}
			var m map[string]any
			if err := json.Unmarshal(ta.stdout.Bytes(), &m); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, ta.stdout)
			}
			for _, k := range []string{"stdout", "stderr", "exit_code", "execution_time", "status", "error_message",
				"resource_usage", "limits_applied", "language", "backend", "session_id", "truncated", "memory_exceeded"} {
				if _, ok := m[k]; !ok {
					t.Errorf("key %s missing", k)
				}
			}
			if m["status"] != tt.status || m["language"] != "fake" || m["backend"] != "native" || m["session_id"] != "s-1" {
				t.Errorf("status %v language %v backend %v session %v", m["status"], m["language"], m["backend"], m["session_id"])
			}
			if tt.status == "success" && m["error_message"] != nil {
				t.Errorf("error_message %v, want null", m["error_message"])
			}
			if ta.stderr.Len() != 0 {
				t.Errorf("stderr %q: --json keeps stderr quiet", ta.stderr)
			}
		})
	}
}

func TestRunJSONNoBackend(t *testing.T) {
	ta := newApp(t, "")
	code := ta.run("run", "--json", "--backend", "docker", source(t, "main.fk", "print hi"))
	if code != ExitSandbox {
		t.Errorf("exit %d, want %d", code, ExitSandbox)
	}
	var m map[string]any
	if err := json.Unmarshal(ta.stdout.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m["status"] != "setup_error" || m["exit_code"] != -1.0 || !strings.Contains(m["error_message"].(string), "no docker socket") {
		t.Errorf("result %v", m)
	}
}

func TestRunFromStdin(t *testing.T) {
	ta := newApp(t, "print from stdin")
	if code := ta.run("run", "-"); code != 2 || !strings.Contains(ta.stderr.String(), "--lang is required") {
		t.Errorf("run - without --lang: exit %d, stderr %q", code, ta.stderr)
	}
	ta = newApp(t, "print from stdin")
	if code := ta.run("run", "--lang", "fake", "-"); code != 0 || ta.stdout.String() != "from stdin\n" {
		t.Errorf("run --lang fake -: exit %d, stdout %q, stderr %q", code, ta.stdout, ta.stderr)
	}
	if ta.fake.Last().Stdin != nil {
		t.Error("the program's stdin is not empty without --stdin")
	}
}

func TestRunStdin(t *testing.T) {
	input := source(t, "in.txt", "line 1\nline 2\n")
	ta := newApp(t, "")
	if code := ta.run("run", "--stdin", input, source(t, "a.fk", "cat")); code != 0 || ta.stdout.String() != "line 1\nline 2\n" {
		t.Errorf("--stdin FILE: exit %d stdout %q stderr %q", code, ta.stdout, ta.stderr)
	}
	ta = newApp(t, "typed input")
	if code := ta.run("run", "--stdin", "-", source(t, "a.fk", "cat")); code != 0 || ta.stdout.String() != "typed input" {
		t.Errorf("--stdin -: exit %d stdout %q stderr %q", code, ta.stdout, ta.stderr)
	}
	ta = newApp(t, "cat")
	if code := ta.run("run", "--lang", "fake", "--stdin", "-", "-"); code != 2 || !strings.Contains(ta.stderr.String(), "--stdin") {
		t.Errorf("code and input both from stdin: exit %d stderr %q", code, ta.stderr)
	}
	ta = newApp(t, "")
	if code := ta.run("run", "--stdin", filepath.Join(t.TempDir(), "missing"), source(t, "a.fk", "cat")); code != 2 || !strings.Contains(ta.stderr.String(), "--stdin") {
		t.Errorf("missing --stdin file: exit %d stderr %q", code, ta.stderr)
	}
}

func TestRunTooLarge(t *testing.T) {
	big := func(name string) string {
		p := filepath.Join(t.TempDir(), name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		// A sparse file: the size is checked before anything is read.
		if err := f.Truncate(MaxInputBytes + 1); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return p
	}
	ta := newApp(t, "")
	if code := ta.run("run", big("huge.fk")); code != 2 || !strings.Contains(ta.stderr.String(), "larger than 16 MB") {
		t.Errorf("huge source: exit %d stderr %q", code, ta.stderr)
	}
	ta = newApp(t, "")
	if code := ta.run("run", "--stdin", big("in"), source(t, "a.fk", "cat")); code != 2 || !strings.Contains(ta.stderr.String(), "--stdin") {
		t.Errorf("huge --stdin: exit %d stderr %q", code, ta.stderr)
	}
	ta = newApp(t, strings.Repeat("x", MaxInputBytes+1))
	if code := ta.run("run", "--lang", "fake", "-"); code != 2 || !strings.Contains(ta.stderr.String(), "larger than 16 MB") {
		t.Errorf("huge code on stdin: exit %d stderr %q", code, ta.stderr)
	}
	ta = newApp(t, "")
	if code := ta.run("run", "--lang", "fake", t.TempDir()); code != 2 || !strings.Contains(ta.stderr.String(), "holds no file") {
		t.Errorf("empty directory as source: exit %d stderr %q", code, ta.stderr)
	}
}

func TestRunArguments(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		exit  int
		inErr string
	}{
		{"no file", []string{"run"}, 2, "missing FILE"},
		{"two files, one missing", []string{"run", "a.fk", "b.fk"}, 2, "a.fk: no such file"},
		{"entry without files", []string{"run", "--entry", "a.fk", "x.fk"}, 2, "--entry: only with a DIR or several FILEs"},
		{"unknown extension", []string{"run", "x.cob"}, 2, "--lang"},
		{"missing file", []string{"run", "nope.fk"}, 2, "nope.fk"},
		{"missing flag value", []string{"run", "nope.fk", "--lang"}, 2, "flag needs an argument: --lang"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ta := newApp(t, "")
			if code := ta.run(tt.args...); code != tt.exit || !strings.Contains(ta.stderr.String(), tt.inErr) {
				t.Errorf("exit %d stderr %q, want %d naming %q", code, ta.stderr, tt.exit, tt.inErr)
			}
		})
	}
}

func TestRunFlagsAfterFile(t *testing.T) {
	ta := newApp(t, "")
	code := ta.run("run", source(t, "main.fk", "print hi"), "--memory", "32", "--json")
	if code != 0 {
		t.Fatalf("exit %d stderr %q", code, ta.stderr)
	}
	if ta.fake.Last().Limits.Memory != 32<<20 || !strings.HasPrefix(ta.stdout.String(), "{") {
		t.Errorf("flags after the file were not applied: %+v %q", ta.fake.Last().Limits, ta.stdout)
	}
}

func TestRunEnvironment(t *testing.T) {
	ta := newApp(t, "")
	if code := ta.run("run", source(t, "main.fk", "print hi")); code != 0 {
		t.Fatal(ta.stderr)
	}
	env := ta.fake.Last().Env
	for _, want := range []string{"HOME=/workspace", "TMPDIR=/tmp", "LANG=C.UTF-8", "LC_ALL=C.UTF-8"} {
		if !slices.Contains(env, want) {
			t.Errorf("env %q lacks %s", env, want)
		}
	}
}

func TestRunSessionKeepsFiles(t *testing.T) {
	state := stateDir(t)
	run := func(session, code string) (int, string, string) {
		t.Helper()
		ta := newApp(t, "")
		ta.LookupEnv = stateEnv(state)
		code2 := ta.run("run", source(t, "main.fk", code), "--session", session)
		return code2, ta.stdout.String(), ta.stderr.String()
	}
	if code, _, stderr := run("s1", "touch notes.txt"); code != 0 {
		t.Fatalf("touch: exit %d, stderr %q", code, stderr)
	}
	tests := []struct {
		session, want string
	}{
		{"s1", "notes.txt\n"}, // the next run of s1 sees the file
		{"s2", ""},            // another session does not
		{"s1", "notes.txt\n"}, // nor does it disturb s1
	}
	for _, tt := range tests {
		code, stdout, stderr := run(tt.session, "ls")
		if code != 0 || stdout != tt.want {
			t.Errorf("ls in %s: exit %d, stdout %q, want %q (stderr %q)", tt.session, code, stdout, tt.want, stderr)
		}
	}
	// Every file sits beneath the state directory.
	if _, err := os.Stat(filepath.Join(state, "coderunner", "sessions", "s1", "notes.txt")); err != nil {
		t.Errorf("session file not under XDG_STATE_HOME: %v", err)
	}
}

func TestRunSessionRefusals(t *testing.T) {
	state := stateDir(t)
	tests := []struct {
		name, session, config string
		want                  string
	}{
		{name: "traversal", session: "../../etc", want: "--session"},
		{name: "slash", session: "a/b", want: "--session"},
		{name: "dot", session: "..", want: "--session"},
		{name: "too long", session: strings.Repeat("x", 65), want: "--session"},
		{name: "turned off", session: "s1", config: "sessions:\n  max_count: 0\n", want: "sessions are turned off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ta := newApp(t, "")
			ta.LookupEnv = stateEnv(state)
			cfg := filepath.Join("testdata", "fake.yaml")
			if tt.config != "" {
				base, err := os.ReadFile(cfg)
				if err != nil {
					t.Fatal(err)
				}
				cfg = source(t, "config.yaml", string(base)+tt.config)
			}
			code := ta.Run(context.Background(), []string{"run", "--config", cfg, "--session", tt.session, source(t, "main.fk", "touch x")})
			if code != ExitUsage || !strings.Contains(ta.stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, ta.stderr, ExitUsage, tt.want)
			}
			if ta.fake.Last() != nil {
				t.Error("the program ran")
			}
		})
	}
	entries, _ := os.ReadDir(filepath.Join(state, "coderunner", "sessions"))
	if len(entries) != 0 {
		t.Errorf("refused sessions left %d entries", len(entries))
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(state), "etc")); err == nil {
		t.Error("a hostile id made a directory outside the state directory")
	}
}
