package controlplane

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
)

// TestResultsDirFull: with RESULTS_DIR on a full file system (a 16 KiB
// tmpfs) and the control plane down, results that cannot be stored are
// kept in memory, counted in the spool and delivered once the control
// plane is back; nothing fails or is lost.
func TestResultsDirFull(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=16k,mode=0700"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	var up atomic.Bool
	f := newFakeCP(t, func(int, call) int {
		if up.Load() {
			return http.StatusOK
		}
		return http.StatusServiceUnavailable
	})
	r, logs := newReporter(t, f, dir, nil)
	const n = 40
	for i := range n {
		id := "full-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if err := r.Result(id, map[string]string{"stdout": strings.Repeat("x", 2000)}); err != nil {
			t.Fatal(err)
		}
	}
	stored, _ := os.ReadDir(dir)
	if got, _ := r.Spool(); got != n || len(stored) >= n {
		t.Fatalf("%d results pending, %d stored; want %d pending and fewer stored (the tmpfs is full)", got, len(stored), n)
	}
	if !strings.Contains(logs.String(), "no space left on device") {
		t.Error("the full file system is not logged")
	}
	up.Store(true)
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	delivered := map[string]bool{}
	f.mu.Lock()
	for _, c := range f.calls {
		if strings.HasSuffix(c.path, "/result") && c.body["stdout"] != nil {
			delivered[c.path] = true
		}
	}
	f.mu.Unlock()
	left, _ := os.ReadDir(dir)
	if len(delivered) != n || len(left) != 0 {
		t.Fatalf("%d of %d results delivered, %d files left in the results directory", len(delivered), n, len(left))
	}
	t.Logf("%d results: %d stored before the tmpfs filled, all %d delivered from memory once the control plane was back", n, len(stored), len(delivered))
}
