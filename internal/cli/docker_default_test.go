package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/cli"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox/docker"
)

// TestDockerWithoutConfig runs programs on the docker backend with no
// --config, no CODERUNNER_CONFIG and no user configuration, after
// scripts/build-images.sh ran (.ci/run runs it before the tests): the
// images it recorded in /etc/coderunner/docker-images.yaml are used.
// Without them every run asked the engine for a public image
// (python:3.11-slim, gcc:12) and failed with no registry.
func TestDockerWithoutConfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	testutil.Require(t, docker.CheckAvailable(ctx, ""), "needs a Docker engine (scripts/start-dockerd.sh)")
	recorded := filepath.Join(config.SystemDir, config.ImagesFile)
	_, err := os.Stat(recorded)
	testutil.Require(t, err == nil, "needs "+recorded+" (scripts/build-images.sh all)")

	dir := t.TempDir()
	for _, tc := range []struct{ file, code, want string }{
		{"hello.py", "print('hello from python')\n", "hello from python\n"},
		{"hello.c", "#include <stdio.h>\nint main(void) { puts(\"hello from c\"); return 0; }\n", "hello from c\n"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			if err := os.WriteFile(path, []byte(tc.code), 0o644); err != nil {
				t.Fatal(err)
			}
			reg := backend.NewRegistry()
			backend.Add(reg, docker.Module)
			var out, errb bytes.Buffer
			a := &cli.App{
				Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Registry: reg,
				// No CODERUNNER_CONFIG, XDG_CONFIG_HOME or HOME: only
				// /etc/coderunner is searched.
				LookupEnv: func(string) (string, bool) { return "", false },
			}
			code := a.Run(context.Background(), []string{"run", "--backend", "docker", "--timeout", "60s", path})
			if code != 0 || out.String() != tc.want {
				t.Fatalf("exit %d, stdout %q, want %q; stderr %s", code, out.String(), tc.want, errb.String())
			}
		})
	}
}
