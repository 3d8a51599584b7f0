package docker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/coderunner/coderunner/internal/testutil"
)

func TestStaleOwner(t *testing.T) {
	self := processOwner(os.Getpid())
	testutil.Require(t, self != "", "needs /proc")
	parts := strings.Split(self, "/")
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	for _, tc := range []struct {
		owner string
		stale bool
	}{
		{self, false},
		{fmt.Sprintf("%s/%s/%d/%s", parts[0], parts[1], dead, "12345"), true},
		// Our pid, another start time: the pid was reused.
		{fmt.Sprintf("%s/%s/%s/%s", parts[0], parts[1], parts[2], parts[3]+"0"), true},
		// Another boot, another PID namespace: another machine's.
		{fmt.Sprintf("%s/%s/%d/%s", "another-boot", parts[1], dead, "12345"), false},
		{fmt.Sprintf("%s/%s/%d/%s", parts[0], "pid:[1]", dead, "12345"), false},
		{"", false},
		{"a/b/c", false},
		{fmt.Sprintf("%s/%s/-1/1", parts[0], parts[1]), false},
		{fmt.Sprintf("%s/%s/%d/", parts[0], parts[1], dead), false},
	} {
		if got := staleOwner(tc.owner, self); got != tc.stale {
			t.Errorf("staleOwner(%q) = %v, want %v", tc.owner, got, tc.stale)
		}
	}
}

// TestStaleContainersRemovedAtStart: a coderunner process killed, or
// whose engine was down when it ended, leaves containers; the next
// backend removes those of processes that are gone, and only those.
func TestStaleContainersRemovedAtStart(t *testing.T) {
	const image = "coderunner/core:bookworm"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	_, err = cli.ImageInspect(ctx, image)
	testutil.Require(t, err == nil, "needs a Docker engine and the image "+image)
	self := processOwner(os.Getpid())
	testutil.Require(t, self != "", "needs /proc")
	parts := strings.Split(self, "/")
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	owners := map[string]bool{ // owner -> stale
		fmt.Sprintf("%s/%s/%d/%s", parts[0], parts[1], cmd.Process.Pid, "12345"): true,
		fmt.Sprintf("%s/%s/%s/%s", parts[0], parts[1], parts[2], parts[3]+"0"):   true,
		self: false,
		fmt.Sprintf("%s/%s/%d/%s", "another-boot", parts[1], cmd.Process.Pid, "1"): false,
	}
	ids := map[string]bool{} // container -> stale
	for owner, stale := range owners {
		c, err := cli.ContainerCreate(context.Background(), &container.Config{
			Image: image, Cmd: []string{"true"},
			Labels: map[string]string{labelBackend: "docker", labelInstance: "test-stale", labelOwner: owner},
		}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		ids[c.ID] = stale
		t.Cleanup(func() { _ = cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true}) })
	}
	b, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	exists := func(id string) bool {
		_, err := cli.ContainerInspect(context.Background(), id)
		return !cerrdefs.IsNotFound(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		left := 0
		for id, stale := range ids {
			if stale && exists(id) {
				left++
			}
		}
		if left == 0 {
			break
		}
	}
	for id, stale := range ids {
		if got := exists(id); got == stale {
			t.Errorf("container %.12s (stale %v): exists %v", id, stale, got)
		}
	}
}
