package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/cli"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/docker"
)

// coreImage is the image scripts/build-images.sh makes for the core
// languages; .ci/run builds it before the tests.
const coreImage = "coderunner/core:bookworm"

// dockerDoctor runs doctor --json with only the docker backend and the
// given configuration, and returns the docker backend's report.
func dockerDoctor(t *testing.T, config string) (info struct {
	Name      string          `json:"name"`
	Available bool            `json:"available"`
	Reason    string          `json:"reason"`
	Checks    []sandbox.Check `json:"checks"`
	Warnings  []string        `json:"warnings"`
}) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := backend.NewRegistry()
	backend.Add(reg, docker.Module)
	var out, errb bytes.Buffer
	a := &cli.App{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Registry: reg,
		LookupEnv: func(string) (string, bool) { return "", false },
	}
	a.Run(context.Background(), []string{"doctor", "--json", "--config", path})
	var rep struct {
		Backends []json.RawMessage `json:"backends"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("doctor --json: %v\nstdout %s\nstderr %s", err, out.String(), errb.String())
	}
	for _, raw := range rep.Backends {
		if err := json.Unmarshal(raw, &info); err != nil {
			t.Fatal(err)
		}
		if info.Name == "docker" {
			return info
		}
	}
	t.Fatalf("doctor --json has no docker backend: %s", out.String())
	return info
}

// checkOf finds a check by name.
func checkOf(checks []sandbox.Check, name string) (sandbox.Check, bool) {
	for _, c := range checks {
		if c.Name == name {
			return c, true
		}
	}
	return sandbox.Check{}, false
}

// TestDoctorDocker checks that doctor says whether the engine answers and
// which of the configured images are present.
func TestDoctorDocker(t *testing.T) {
	const missing = "coderunner/does-not-exist:never"
	images := "languages:\n  bash: {image: \"" + coreImage + "\"}\n  python: {image: \"" + coreImage + "\"}\n  rust: {image: \"" + missing + "\"}\n"

	t.Run("no engine", func(t *testing.T) {
		d := dockerDoctor(t, "docker:\n  pull_policy: never\n  host: unix://"+filepath.Join(t.TempDir(), "nobody.sock")+"\n"+images)
		if d.Available {
			t.Errorf("docker available without an engine: %+v", d)
		}
		if c, ok := checkOf(d.Checks, "engine"); !ok || c.OK || !strings.Contains(c.Detail, "does not answer") {
			t.Errorf("engine check %+v, want a failure saying the engine does not answer", c)
		}
		if c, ok := checkOf(d.Checks, "image "+coreImage); !ok || c.OK || !strings.Contains(c.Detail, "not checked") {
			t.Errorf("image check %+v, want the configured image listed as not checked", c)
		}
	})

	t.Run("engine", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		testutil.Require(t, docker.CheckAvailable(ctx, ""), "needs a Docker engine (scripts/start-dockerd.sh)")
		err := exec.CommandContext(ctx, "docker", "image", "inspect", coreImage).Run()
		testutil.Require(t, err == nil, "needs the image "+coreImage+" (scripts/build-images.sh core)")

		d := dockerDoctor(t, "docker:\n  pull_policy: never\n"+images)
		if !d.Available {
			t.Errorf("docker not available: %s", d.Reason)
		}
		if c, ok := checkOf(d.Checks, "engine"); !ok || !c.OK || !strings.Contains(c.Detail, "Docker") {
			t.Errorf("engine check %+v, want the engine's version", c)
		}
		if c, ok := checkOf(d.Checks, "image "+coreImage); !ok || !c.OK || !strings.Contains(c.Detail, "present, for bash") || !strings.Contains(c.Detail, "python") {
			t.Errorf("image check %+v, want %s present for bash and python", c, coreImage)
		}
		if c, ok := checkOf(d.Checks, "image "+missing); !ok || c.OK || !strings.Contains(c.Detail, "missing") || !strings.Contains(c.Detail, "rust") {
			t.Errorf("image check %+v, want %s missing for rust", c, missing)
		}
		if !strings.Contains(strings.Join(d.Warnings, "\n"), "scripts/build-images.sh") {
			t.Errorf("warnings %q do not say how to build the images", d.Warnings)
		}
	})
}
