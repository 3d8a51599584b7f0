//go:build linux

package threadid

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/testutil"
)

const testID = 1_999_123

// rootOnly is a file only root may read.
func rootOnly(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// ids reads the calling thread's real and effective uid and gid with raw
// system calls, which report the thread's own ids.
func ids() (ruid, euid, rgid, egid int) {
	r, e, _ := unix.Getresuid()
	gr, ge, _ := unix.Getresgid()
	return r, e, gr, ge
}

// TestAsDropsEverything checks that f runs as the id alone: without
// root's capabilities it cannot read root's 0600 file, and the process's
// other threads stay root meanwhile; afterwards the thread is root again.
func TestAsDropsEverything(t *testing.T) {
	testutil.RequireRoot(t)
	secret := rootOnly(t)
	var others sync.WaitGroup
	err := As(testID, func() error {
		r, e, gr, ge := ids()
		if r != testID || e != testID || gr != testID || ge != testID {
			t.Errorf("ids in f: uid %d/%d gid %d/%d, want %d", r, e, gr, ge, testID)
		}
		if _, err := os.ReadFile(secret); !os.IsPermission(err) {
			t.Errorf("reading root's 0600 file as %d: %v, want permission denied", testID, err)
		}
		others.Go(func() {
			// Another goroutine runs on another thread.
			if _, err := os.ReadFile(secret); err != nil {
				t.Errorf("another goroutine lost root: %v", err)
			}
		})
		others.Wait()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r, e, gr, ge := ids(); r|e|gr|ge != 0 {
		t.Fatalf("after As: uid %d/%d gid %d/%d, want root", r, e, gr, ge)
	}
	if _, err := os.ReadFile(secret); err != nil {
		t.Fatalf("root after As: %v", err)
	}
}

// TestPrivilegedKeepsCapabilities checks that f runs as the id with
// root's capabilities: it reads root's 0600 file, and what it creates
// belongs to the id.
func TestPrivilegedKeepsCapabilities(t *testing.T) {
	testutil.RequireRoot(t)
	secret := rootOnly(t)
	made := filepath.Join(t.TempDir(), "made")
	err := Privileged(testID, func() error {
		if _, e, _, _ := ids(); e != testID {
			t.Errorf("effective uid in f: %d, want %d", e, testID)
		}
		if _, err := os.ReadFile(secret); err != nil {
			t.Errorf("reading root's 0600 file with root's capabilities: %v", err)
		}
		return os.WriteFile(made, nil, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(made, &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != testID {
		t.Fatalf("file made in f belongs to %d, want %d", st.Uid, testID)
	}
	if d, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); d != 1 {
		t.Fatalf("process left undumpable (%d)", d)
	}
}

func TestRefusesRootAndNegative(t *testing.T) {
	for _, id := range []int{0, -1} {
		if err := As(id, func() error { t.Fatal("f ran"); return nil }); err == nil {
			t.Fatalf("As(%d) ran", id)
		}
	}
}
