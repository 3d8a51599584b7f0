package docker_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/internal/judgetest"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox/docker"
)

// imagesConfig is the configuration that points the docker backend at the
// images scripts/build-images.sh makes; the test reads it rather than a
// copy, so that what the README tells users to run is what is tested.
const imagesConfig = "../../scripts/docker-images.yaml"

// TestLanguages judges a program in every language of the table through
// runner and judge on the docker backend, each in the image
// scripts/docker-images.yaml gives it (judgetest.Languages): accepted,
// wrong answer and runtime error in one request, a compilation error and
// a memory hog for compiled languages. It checks that the recipes'
// commands run unchanged in the local images.
func TestLanguages(t *testing.T) {
	requireDocker(t)
	cfg, err := config.Load(imagesConfig, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cfg.LanguageTable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := docker.New(docker.Options{Languages: tbl, PullPolicy: cfg.Docker.PullPolicy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	judgetest.Languages(t, b, tbl, func(t *testing.T, l *lang.Language) { requireImage(t, l.Image) })
}

// requireImage needs image in the local engine.
func requireImage(t testing.TB, image string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := exec.CommandContext(ctx, "docker", "image", "inspect", image).Run()
	testutil.Require(t, err == nil, "needs the image "+image+" (scripts/build-images.sh all)")
}
