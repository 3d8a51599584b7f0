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
func openDocker(t *testing.T) sandbox.Backend {
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
	b, err := docker.New(docker.Options{Languages: images, PullPolicy: docker.PullNever})
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

// containers lists the containers this test process's backends made that
// still exist, in any state.
func containers() error {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", "coderunner.pid="+strconv.Itoa(os.Getpid())))})
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return nil
	}
	var found []string
	for _, c := range list {
		found = append(found, c.ID[:12]+" ("+c.State+")")
	}
	return fmt.Errorf("containers %s", strings.Join(found, ", "))
}

// TestDocker runs the interpreter suite on the docker backend.
func TestDocker(t *testing.T) {
	runSuite(t, target{name: "docker", open: openDocker, left: containers})
}
