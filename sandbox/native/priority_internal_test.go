package native

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/testutil"
)

// TestPriorityRestorable: root of the host can give a lowered priority
// back; a thread without CAP_SYS_NICE, as root of a user namespace of its
// own is, cannot, and the check says so rather than leave sandboxes at
// the lowest priority for good.
func TestPriorityRestorable(t *testing.T) {
	testutil.RequireRoot(t)
	uidMap, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		t.Fatal(err)
	}
	hostRoot := strings.Join(strings.Fields(string(uidMap)), " ") == "0 0 4294967295"
	testutil.Require(t, hostRoot, "not root of the initial user namespace")
	if !priorityRestorable() {
		t.Fatal("root of the host cannot give a lowered priority back")
	}
	got := make(chan bool)
	go func() {
		// The thread ends with this goroutine, its capabilities and
		// priority with it.
		runtime.LockOSThread()
		var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			t.Error(err)
			got <- true
			return
		}
		data[0].Effective &^= 1 << unix.CAP_SYS_NICE
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			t.Error(err)
			got <- true
			return
		}
		got <- lowerAndRestore()
	}()
	if <-got {
		t.Fatal("a thread without CAP_SYS_NICE reported that it gave its priority back")
	}
}
