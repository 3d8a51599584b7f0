package docker_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/docker"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

// testImage is the image scripts/build-images.sh builds for the core
// languages; .ci/run builds it before the tests.
const testImage = "coderunner/core:bookworm"

// localImages maps every core language to the locally built image.
func localImages(t testing.TB) *lang.Table {
	t.Helper()
	tbl, err := lang.New(map[string]lang.Recipe{
		"python": {Image: testImage}, "python3": {Image: testImage}, "c": {Image: testImage},
		"cpp": {Image: testImage}, "bash": {Image: testImage},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// requireDocker needs an engine that answers and the test image: skipped
// with the reason normally, a failure under CI=true.
func requireDocker(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	testutil.Require(t, docker.CheckAvailable(ctx, ""), "needs a Docker engine (start dockerd)")
	err := exec.CommandContext(ctx, "docker", "image", "inspect", testImage).Run()
	testutil.Require(t, err == nil, "needs the image "+testImage+" (scripts/build-images.sh core)")
}

func newBackend(t testing.TB, opts docker.Options) *docker.Backend {
	t.Helper()
	requireDocker(t)
	opts.Languages = localImages(t)
	opts.PullPolicy = docker.PullNever
	b, err := docker.New(opts)
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

// TestConformance runs the suite with a container made for each run, and
// with warm containers made ahead (after its first run, each kind of run
// the suite makes finds one).
func TestConformance(t *testing.T) {
	for _, warm := range []int{0, 2} {
		t.Run(map[int]string{0: "per run", 2: "warm"}[warm], func(t *testing.T) {
			if warm > 0 {
				requireWarm(t)
			}
			b := newBackend(t, docker.Options{Warm: warm})
			cc, _ := exec.LookPath("gcc")
			testutil.Require(t, cc != "", "gcc is needed to build the 32-bit syscall probe")
			sandboxtest.Run(t, sandboxtest.Env{
				Backend:   b,
				CC:        cc,
				Leftovers: func() error { return b.Leftovers(context.Background()) },
				// Without a fixed docker.user every container has a uid
				// of its own.
				QuotasPerSandbox: true,
			})
			if warm > 0 && b.Warm().Taken == 0 {
				t.Error("no run of the suite found a warm container")
			}
			t.Logf("warm pool: %+v", b.Warm())
		})
	}
}

// TestReuse runs one program several times: the runs share a container,
// and none sees what an earlier one left.
func TestReuse(t *testing.T) {
	for _, reuse := range []bool{true, false} {
		name := "reused"
		if !reuse {
			name = "per-run"
		}
		t.Run(name, func(t *testing.T) {
			b := newBackend(t, docker.Options{Reuse: reuse})
			spec := &sandbox.Spec{
				Args:  []string{"/bin/sh", "-c", `ls -A /workspace /tmp /dev/shm; cat main.txt; echo x > /workspace/left; echo x > /tmp/left; echo x > /dev/shm/left; rm main.txt; (sleep 60 &) ; cat`},
				Env:   []string{"PATH=/usr/bin:/bin"},
				Files: []sandbox.File{{Path: "main.txt", Content: []byte("main\n")}},
			}
			for i := range 4 {
				res, err := b.Run(context.Background(), spec)
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != sandbox.StatusOK {
					t.Fatalf("run %d: status %s stderr %s", i, res.Status, res.Stderr)
				}
				want := "/dev/shm:\n\n/tmp:\n\n/workspace:\nmain.txt\nmain\n"
				if string(res.Stdout) != want {
					t.Fatalf("run %d saw %q, want %q", i, res.Stdout, want)
				}
				// The cleanup runs in the background.
				deadline := time.Now().Add(10 * time.Second)
				for b.Leftovers(context.Background()) != nil && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
			}
			if err := b.Leftovers(context.Background()); err != nil {
				t.Fatalf("left behind: %v", err)
			}
		})
	}
}

// TestMissingImage names the image in the setup error.
func TestMissingImage(t *testing.T) {
	requireDocker(t)
	tbl, err := lang.New(map[string]lang.Recipe{"bash": {Image: "coderunner/does-not-exist:never"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := docker.New(docker.Options{Languages: tbl, PullPolicy: docker.PullNever})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.Run(context.Background(), &sandbox.Spec{Args: []string{"/bin/true"}})
	if err == nil || !errors.Is(err, sandbox.ErrSetup) || !strings.Contains(err.Error(), "coderunner/does-not-exist:never") {
		t.Fatalf("err %v, want ErrSetup naming the image", err)
	}
}

// TestImageForNamesTheImage checks what a compile cache keys on: the
// language's image by reference and by the ID it points to now, so that an
// image rebuilt under the same tag gets new keys.
func TestImageForNamesTheImage(t *testing.T) {
	b := newBackend(t, docker.Options{})
	out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", testImage).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := testImage + "@" + strings.TrimSpace(string(out))
	if got := b.ImageFor("python"); got != want {
		t.Errorf("ImageFor(python) = %q, want %q", got, want)
	}
}

// TestCancelDuringCreate cancels runs at delays spread over a container's
// creation and start: whenever the cancel lands, no container may stay
// behind (the engine finishes a create whose request was cancelled, and
// the container's id would be known to nobody).
func TestCancelDuringCreate(t *testing.T) {
	b := newBackend(t, docker.Options{})
	spec := &sandbox.Spec{Args: []string{"/bin/sh", "-c", "sleep 60"}, Env: []string{"PATH=/usr/bin:/bin"}}
	for d := time.Duration(0); d <= 300*time.Millisecond; d += 15 * time.Millisecond {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		_, err := b.Run(ctx, spec)
		cancel()
		if err == nil {
			t.Fatalf("cancelled after %v: the run ended without an error", d)
		}
		deadline := time.Now().Add(30 * time.Second)
		for b.Leftovers(context.Background()) != nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if err := b.Leftovers(context.Background()); err != nil {
			t.Fatalf("cancelled after %v: left behind: %v", d, err)
		}
	}
}
