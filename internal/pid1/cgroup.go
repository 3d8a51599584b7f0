package pid1

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/mountpoint"
)

// ReadOnlyCgroups lists the cgroup file systems under /sys/fs/cgroup that
// mountinfo (the text of /proc/self/mountinfo) shows mounted read-only,
// with the flags of each mount that a remount must keep.
func ReadOnlyCgroups(mountinfo string) []Mount {
	var out []Mount
	for _, e := range mountpoint.ParseInfo(mountinfo) {
		point, fstype, opts := e.Point, e.FSType, e.Options
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		if point != "/sys/fs/cgroup" && !strings.HasPrefix(point, "/sys/fs/cgroup/") {
			continue
		}
		if !slices.Contains(opts, "ro") {
			continue
		}
		m := Mount{Point: point}
		for _, o := range opts {
			switch o {
			case "nosuid":
				m.Flags |= unix.MS_NOSUID
			case "nodev":
				m.Flags |= unix.MS_NODEV
			case "noexec":
				m.Flags |= unix.MS_NOEXEC
			case "relatime":
				m.Flags |= unix.MS_RELATIME
			}
		}
		out = append(out, m)
	}
	return out
}

// Mount is a mount point and the flags it keeps.
type Mount struct {
	Point string
	Flags uintptr
}

// WritableCgroups remounts read-write the container's cgroup file systems
// a runtime mounted read-only, so that the sandboxes get a cgroup per run
// beneath the container's own. It needs CAP_SYS_ADMIN; with a private
// cgroup namespace (docker run --cgroupns=private) the mounts show the
// container's own cgroup as their root, so nothing above it becomes
// reachable, only the container's own limits become writable to this
// container.
func WritableCgroups() error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("unable to read the mounts: %w", err)
	}
	for _, m := range ReadOnlyCgroups(string(b)) {
		if err := unix.Mount("", m.Point, "", unix.MS_REMOUNT|unix.MS_BIND|m.Flags, ""); err != nil {
			return fmt.Errorf("unable to remount %s read-write (it needs CAP_SYS_ADMIN): %w", m.Point, err)
		}
	}
	return nil
}
