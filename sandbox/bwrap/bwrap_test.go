package bwrap_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/bwrap"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

// requireBwrap needs root and the bwrap binary: skipped with the reason
// normally, a failure under CI=true.
func requireBwrap(t testing.TB) {
	t.Helper()
	testutil.RequireRoot(t)
	_, err := exec.LookPath("bwrap")
	testutil.Require(t, err == nil, "needs bwrap (apt-get install bubblewrap)")
}

func newBackend(t testing.TB) *bwrap.Backend {
	t.Helper()
	requireBwrap(t)
	b, err := bwrap.New(bwrap.Options{})
	if err != nil {
		t.Fatalf("bwrap backend unavailable: %v", err)
	}
	return b
}

func TestConformance(t *testing.T) {
	b := newBackend(t)
	cc, _ := exec.LookPath("gcc")
	testutil.Require(t, cc != "", "gcc is needed to build the 32-bit syscall probe")
	sandboxtest.Run(t, sandboxtest.Env{
		Backend:   b,
		Mounts:    sandbox.SystemMounts(),
		CC:        cc,
		Leftovers: leftovers,
		// As root every sandbox has a bwrap uid of its own.
		QuotasPerSandbox: true,
	})
}

// leftovers finds processes running as one of bwrap's host uids, run
// cgroups of this process, and run tmpfs still mounted.
func leftovers() error {
	var found []string
	first, last := bwrap.DefaultHostUIDBase+1000, bwrap.DefaultHostUIDBase+1999
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" && inRange(f[1], first, last) {
				found = append(found, "process "+e.Name())
			}
		}
	}
	prefix := fmt.Sprintf("bwrap-%d-", os.Getpid())
	_ = filepath.WalkDir("/sys/fs/cgroup", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), prefix) {
			found = append(found, "cgroup "+path)
			return filepath.SkipDir
		}
		if strings.Count(path, "/") > 8 {
			return filepath.SkipDir
		}
		return nil
	})
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], "/run/coderunner-bwrap/run-") {
			found = append(found, "mount "+f[4])
		}
	}
	runs, _ := filepath.Glob("/run/coderunner-bwrap/run-*")
	for _, r := range runs {
		found = append(found, "directory "+r)
	}
	if len(found) > 0 {
		return fmt.Errorf("%s", strings.Join(found, ", "))
	}
	return nil
}

// inRange reports whether the number s is within [first, last].
func inRange(s string, first, last int) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= first && n <= last
}

// TestAlternatives attacks the host's /etc/alternatives as the sandbox
// shows it: read-only, nosuid and nodev, its links resolved inside.
func TestAlternatives(t *testing.T) {
	requireBwrap(t)
	sandboxtest.TestAlternatives(t, func(t *testing.T, dir string) sandbox.Backend {
		b, err := bwrap.New(bwrap.WithAlternatives(bwrap.Options{}, dir))
		if err != nil {
			t.Fatalf("bwrap backend unavailable: %v", err)
		}
		return b
	}, sandbox.SystemMounts(), false)
}

func TestFonts(t *testing.T) {
	sandboxtest.TestFonts(t, newBackend(t), sandbox.SystemMounts())
}
