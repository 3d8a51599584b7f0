package cli

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/sandbox"
)

// withNativeSection replaces ta's native backend by its fake, built from
// the native backend's section of the configuration, which it records.
func withNativeSection(ta *testApp, got *[]bool) {
	r := backend.NewRegistry()
	backend.Add(r, backend.Module[config.NativeSection]{Name: "native",
		Section: (*config.Config).NativeSection,
		New: func(_ backend.Env, s config.NativeSection) (sandbox.Backend, error) {
			*got = append(*got, s.AllowRlimitsOnly)
			return ta.fake, nil
		}})
	ta.Registry = r
}

// TestAllowRlimitsOnly: the flag, the environment and the configuration
// all reach the backend; the flag wins.
func TestAllowRlimitsOnly(t *testing.T) {
	tests := []struct {
		name string
		env  string
		args []string
		want bool
	}{
		{"default", "", nil, false},
		{"flag", "", []string{"--allow-rlimits-only"}, true},
		{"environment", "true", nil, true},
		{"flag over the environment", "true", []string{"--allow-rlimits-only=false"}, false},
		{"environment false", "false", nil, false},
	}
	for _, cmd := range []string{"run", "judge"} {
		for _, tt := range tests {
			t.Run(cmd+" "+tt.name, func(t *testing.T) {
				ta := newApp(t, "")
				var got []bool
				withNativeSection(ta, &got)
				env := ta.LookupEnv
				ta.LookupEnv = func(k string) (string, bool) {
					if k == "CODERUNNER_BACKEND_ALLOW_RLIMITS_ONLY" && tt.env != "" {
						return tt.env, true
					}
					return env(k)
				}
				args := append([]string{cmd}, tt.args...)
				if cmd == "judge" {
					args = append(args, "--tests", source(t, "tests.json", `[{"input": "", "expected_output": "x"}]`))
				}
				args = append(args, source(t, "main.fk", "print x"))
				ta.run(args...)
				if len(got) == 0 {
					t.Fatalf("no backend built; stderr %s", ta.stderr)
				}
				for _, g := range got {
					if g != tt.want {
						t.Errorf("the backend's section has AllowRlimitsOnly %v, want %v", g, tt.want)
					}
				}
			})
		}
	}
}

func TestAllowRlimitsOnlyHelp(t *testing.T) {
	for _, cmd := range []string{"run", "judge", "serve", "mcp"} {
		ta := newApp(t, "")
		if code := ta.Run(context.Background(), []string{cmd, "-h"}); code != 0 {
			t.Fatalf("%s -h: exit %d", cmd, code)
		}
		out := ta.stdout.String()
		for _, want := range []string{"--allow-rlimits-only", "backend.allow_rlimits_only", "CODERUNNER_BACKEND_ALLOW_RLIMITS_ONLY"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s -h lacks %q", cmd, want)
			}
		}
	}
	ta := newApp(t, "")
	if code := ta.Run(context.Background(), []string{"doctor", "--allow-rlimits-only"}); code != ExitUsage {
		t.Errorf("doctor --allow-rlimits-only: exit %d, want %d (it takes no such flag)", code, ExitUsage)
	}
}

// TestRunRefusedWithoutCgroup: a run the backend refuses for want of a
// cgroup is a failure of the sandbox (exit 125) whose message names the
// ways out.
func TestRunRefusedWithoutCgroup(t *testing.T) {
	ta := newApp(t, "")
	ta.fake.Default = func(context.Context, *sandbox.Spec) (*sandbox.Result, error) {
		return nil, sandbox.NoCgroupError(errors.New("cgroups unavailable: not delegated"))
	}
	code := ta.run("run", source(t, "main.fk", "print x"))
	if code != ExitSandbox {
		t.Errorf("exit %d, want %d", code, ExitSandbox)
	}
	for _, want := range []string{"not delegated", "delegate a cgroup", "--allow-rlimits-only"} {
		if !strings.Contains(ta.stderr.String(), want) {
			t.Errorf("stderr lacks %q: %s", want, ta.stderr)
		}
	}
}

const refusal = "sandbox backend unavailable: no usable cgroup, so a run's memory, process and CPU limits cannot hold"

func refusingApp(t *testing.T) *testApp {
	ta := newApp(t, "")
	ta.fake.Report.Refused = refusal
	ta.fake.Report.Warnings = []string{sandbox.RefusedWarning}
	ta.fake.Report.Checks = []sandbox.Check{{Name: "cgroups", OK: false, Detail: "cgroups unavailable: not delegated; every run is refused"}}
	return ta
}

func TestDoctorRefusedText(t *testing.T) {
	ta := refusingApp(t)
	if code := ta.run("doctor"); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, ta.stderr)
	}
	out := ta.stdout.String()
	for _, want := range []string{
		"native: available, but every run is refused (see below)",
		"[FAIL] cgroups: cgroups unavailable: not delegated; every run is refused",
		"warning: no usable cgroup: every run is refused",
		"--allow-rlimits-only",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
}

func TestDoctorRefusedJSON(t *testing.T) {
	ta := refusingApp(t)
	if code := ta.run("doctor", "--json"); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, ta.stderr)
	}
	var rep doctorReport
	if err := json.Unmarshal(ta.stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, ta.stdout)
	}
	if len(rep.Backends) == 0 || rep.Backends[0].Name != "native" || !rep.Backends[0].Available || rep.Backends[0].RunsRefused != refusal {
		t.Errorf("native %+v, want available with runs_refused %q", rep.Backends, refusal)
	}
	if !strings.Contains(ta.stdout.String(), `"runs_refused": "`+refusal) {
		t.Errorf("doctor --json lacks runs_refused:\n%s", ta.stdout)
	}
	// A backend that refuses nothing has no runs_refused at all.
	ta = newApp(t, "")
	if code := ta.run("doctor", "--json"); code != 0 || strings.Contains(ta.stdout.String(), "runs_refused") {
		t.Errorf("exit %d; a backend refusing nothing shows runs_refused:\n%s", code, ta.stdout)
	}
}
