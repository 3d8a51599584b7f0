package interp_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/docker"
)

// The images scripts/build-images.sh builds for Python and JavaScript;
// .ci/run builds them before the tests.
const (
	pythonImage = "coderunner/core:bookworm"
	nodeImage   = "coderunner/javascript:bookworm"
)

// openDocker is a docker backend on the local images, closed when the test
// ends: skipped with the reason without an engine or the images, a
// failure under CI=true.
func openDocker(t *testing.T) sandbox.Backend { t.Helper(); return openDockerWarm(t, 0) }

// openDockerWarm is openDocker with warm containers made ahead of need, as
// serve and mcp keep them (docker.warm).
func openDockerWarm(t *testing.T, warm int) sandbox.Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	testutil.Require(t, docker.CheckAvailable(ctx, ""), "needs a Docker engine (scripts/start-dockerd.sh)")
	for _, image := range []string{pythonImage, nodeImage} {
		err := exec.CommandContext(ctx, "docker", "image", "inspect", image).Run()
		testutil.Require(t, err == nil, "needs the image "+image+" (make images)")
	}
	images, err := lang.New(map[string]lang.Recipe{
		"python": {Image: pythonImage}, "python3": {Image: pythonImage}, "javascript": {Image: nodeImage},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := docker.New(docker.Options{Languages: images, PullPolicy: docker.PullNever, Warm: warm})
	if err != nil {
		t.Fatalf("docker backend unavailable: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return b
}

// containers is what b finds left of a run, and the containers this test
// process's backends made that still exist, in any state, but for those of
// the warm pool, which b accounts for.
func containers(b sandbox.Backend) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var found []string
	if err := b.(*docker.Backend).Leftovers(ctx); err != nil {
		found = append(found, err.Error())
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", "coderunner.pid="+strconv.Itoa(os.Getpid())))})
	if err != nil {
		return err
	}
	for _, c := range list {
		if c.Labels["coderunner.warm"] != "" {
			// The backend's: Leftovers tells one a run took (busy,
			// or being removed) from one made for runs to come.
			continue
		}
		found = append(found, "container "+c.ID[:12]+" ("+c.State+")")
	}
	if len(found) > 0 {
		return fmt.Errorf("%s", strings.Join(found, "; "))
	}
	return nil
}

// TestDocker runs the interpreter suite on the docker backend, with a
// container made for each interpreter and with warm containers made ahead
// (serve's and mcp's default).
func TestDocker(t *testing.T) {
	runSuite(t, target{name: "docker", open: openDocker, left: containers})
}

func TestDockerWarm(t *testing.T) {
	testutil.Require(t, os.Geteuid() == 0, "the docker warm pool mounts workspaces: needs root")
	// The pool fills with containers for the kinds of run it has seen:
	// an interpreter started again (a restart, a session of the same
	// limits) takes one.
	var taken int64
	open := func(t *testing.T) sandbox.Backend {
		b := openDockerWarm(t, 2)
		t.Cleanup(func() { taken += b.(*docker.Backend).Warm().Taken })
		return b
	}
	runSuite(t, target{name: "docker", open: open, left: containers, ownLauncher: true})
	if taken == 0 && !t.Failed() {
		t.Error("no interpreter took a warm container")
	}
}
