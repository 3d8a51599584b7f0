package cli

import (
	"encoding/json"
	"errors"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

func TestDoctorJSON(t *testing.T) {
	ta := newApp(t, "")
	if code := ta.run("doctor", "--json"); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, ta.stderr)
	}
	var rep doctorReport
	if err := json.Unmarshal(ta.stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, ta.stdout)
	}
	if rep.Auto != "native" {
		t.Errorf("auto %q, want native", rep.Auto)
	}
	byName := map[string]backendInfo{}
	for _, b := range rep.Backends {
		byName[b.Name] = b
	}
	if n := byName["native"]; !n.Available || len(n.Checks) != 2 || n.Checks[1].Detail != "v1" || len(n.Warnings) != 1 {
		t.Errorf("native %+v", n)
	}
	if d := byName["docker"]; d.Available || d.Reason != "no docker socket" {
		t.Errorf("docker %+v", d)
	}
	if b := byName["bwrap"]; b.Available || b.Reason != "not built into this binary" {
		t.Errorf("bwrap %+v", b)
	}
	if !hasLang(rep.Languages, "fake", true) {
		t.Errorf("languages %+v lack an available fake", rep.Languages)
	}
}

func hasLang(ls []lang.Info, id string, available bool) bool {
	for _, l := range ls {
		if l.ID == id {
			return l.Available == available
		}
	}
	return false
}

func TestDoctorText(t *testing.T) {
	ta := newApp(t, "")
	if code := ta.run("doctor"); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, ta.stderr)
	}
	out := ta.stdout.String()
	for _, want := range []string{"native: available", "[ok  ] user namespaces: yes", "warning: fake isolation",
		"docker: not available: no docker socket", "bwrap: not available: not built into this binary",
		"--backend auto uses: native", "Languages:", "fake"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
}

func TestDoctorNoBackend(t *testing.T) {
	ta := newApp(t, "")
	ta.Registry = backend.NewRegistry()
	backend.Add(ta.Registry, backend.Module[struct{}]{Name: "native",
		New: func(backend.Env, struct{}) (sandbox.Backend, error) {
			return nil, errors.New("user namespaces are disabled")
		}})
	if code := ta.run("doctor"); code != 1 {
		t.Errorf("exit %d with no working backend, want 1", code)
	}
	if !strings.Contains(ta.stdout.String(), "native: not available: user namespaces are disabled") {
		t.Errorf("output:\n%s", ta.stdout)
	}
}

func TestLangs(t *testing.T) {
	ta := newApp(t, "")
	if code := ta.run("langs", "--json"); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, ta.stderr)
	}
	var ls []lang.Info
	if err := json.Unmarshal(ta.stdout.Bytes(), &ls); err != nil {
		t.Fatal(err)
	}
	var fake, c *lang.Info
	for i := range ls {
		switch ls[i].ID {
		case "fake":
			fake = &ls[i]
		case "c":
			c = &ls[i]
		}
	}
	if fake == nil || !fake.Available || fake.Compiled || strings.Join(fake.Aliases, ",") != "fk" || strings.Join(fake.Extensions, ",") != ".fk" {
		t.Errorf("fake %+v", fake)
	}
	if c == nil || !c.Compiled || (!c.Available && c.Reason == "") {
		t.Errorf("c %+v: an unavailable language must say why", c)
	}

	ta = newApp(t, "")
	if code := ta.run("langs"); code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(ta.stdout.String(), "\n")
	if !strings.HasPrefix(lines[0], "ID") || !strings.Contains(ta.stdout.String(), "fakec") {
		t.Errorf("langs table:\n%s", ta.stdout)
	}
}

func TestVersion(t *testing.T) {
	ta := newApp(t, "")
	if code := ta.run("version"); code != 0 || !strings.HasPrefix(ta.stdout.String(), "coderunner 1.2.3 (commit abc123, go") {
		t.Errorf("exit %d output %q", code, ta.stdout)
	}
	ta = newApp(t, "")
	if code := ta.run("version", "--json"); code != 0 {
		t.Fatal(code)
	}
	var v versionInfo
	if err := json.Unmarshal(ta.stdout.Bytes(), &v); err != nil || v.Version != "1.2.3" || v.Commit != "abc123" {
		t.Errorf("version JSON %q: %v", ta.stdout, err)
	}
}

func TestBuildInfo(t *testing.T) {
	info := &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "deadbeef"}, {Key: "vcs.modified", Value: "true"}}}
	tests := []struct {
		name            string
		version, commit string
		info            *debug.BuildInfo
		ok              bool
		wantV, wantC    string
	}{
		{"ldflags win", "1.0.0", "cafe", info, true, "1.0.0", "cafe"},
		{"from build info", "", "", info, true, "v0.4.0", "deadbeef-dirty"},
		{"clean tree", "", "", &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}}, true, "(devel)", "abc"},
		{"nothing known", "", "", nil, false, "(devel)", "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := buildInfo(tt.version, tt.commit, tt.info, tt.ok)
			if v.Version != tt.wantV || v.Commit != tt.wantC {
				t.Errorf("buildInfo() = %+v, want %s %s", v, tt.wantV, tt.wantC)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	runFlags := []string{"--backend", "--config", "--log-level", "--json", "--lang", "--stdin", "--timeout",
		"--memory", "--cpus", "--pids", "--max-output", "--session"}
	for _, args := range [][]string{{"help", "run"}, {"run", "-h"}, {"run", "--help"}} {
		ta := newApp(t, "")
		if code := ta.Run(t.Context(), args); code != 0 {
			t.Errorf("%v: exit %d", args, code)
		}
		out := ta.stdout.String()
		for _, f := range runFlags {
			if !strings.Contains(out, "  "+f+" ") && !strings.Contains(out, "  "+f+"\n") {
				t.Errorf("%v: usage does not document %s", args, f)
			}
		}
		if strings.Count(out, "Usage:") != 1 {
			t.Errorf("%v: usage printed %d times", args, strings.Count(out, "Usage:"))
		}
		if !strings.Contains(out, "stay for the next run with the same ID") {
			t.Errorf("%v: the help does not say that sessions keep files", args)
		}
		// run cannot keep an interpreter: it says where interpreter
		// sessions are, and offers no mode of its own.
		if !strings.Contains(out, "interpreter sessions") || !strings.Contains(out, "coderunner serve") ||
			!strings.Contains(out, "coderunner mcp") || strings.Contains(out, "  --mode") {
			t.Errorf("%v: the help does not send interpreter sessions to serve and mcp", args)
		}
	}

	ta := newApp(t, "")
	if code := ta.Run(t.Context(), []string{"help"}); code != 0 {
		t.Errorf("help: exit %d", code)
	}
	for _, c := range []string{"run", "doctor", "langs", "version"} {
		if !strings.Contains(ta.stdout.String(), "  "+c+" ") {
			t.Errorf("help does not list %s", c)
		}
	}
	for _, args := range [][]string{nil, {"bogus"}, {"help", "bogus"}} {
		ta := newApp(t, "")
		if code := ta.Run(t.Context(), args); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	ta := newApp(t, "")
	if code := ta.run("langs", "--config", "testdata/missing.yaml"); code != 2 || !strings.Contains(ta.stderr.String(), "--config") {
		t.Errorf("missing config: exit %d stderr %q", code, ta.stderr)
	}
}
