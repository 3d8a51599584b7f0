package mountpoint

import (
	"os"
	"slices"
	"strings"
)

// Entry is one line of /proc/self/mountinfo, reduced to where a file
// system is mounted, its type and the mount's own options.
type Entry struct {
	// Point is where it is mounted, unescaped.
	Point string
	// FSType is the file system type, such as "tmpfs" or "cgroup2".
	FSType string
	// Options are the per-mount options ("ro", "nosuid", ...).
	Options []string
}

// ParseInfo returns the entries of a mountinfo text
// (proc_pid_mountinfo(5)), in order. A line too short to hold a mount
// point, its options, the "-" separator and a type is skipped.
func ParseInfo(mountinfo string) []Entry {
	var out []Entry
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if len(f) < 6 || sep < 0 || sep+1 >= len(f) {
			continue
		}
		out = append(out, Entry{Point: Unescape(f[4]), FSType: f[sep+1], Options: strings.Split(f[5], ",")})
	}
	return out
}

// Beneath lists the mount points at or beneath dir in this process's
// mount namespace, deepest first (the order to unmount them in).
func Beneath(dir string) ([]string, error) {
	info, err := os.ReadFile("/proc/self/mountinfo") //nolint:forbidigo // a file of procfs, host-owned
	if err != nil {
		return nil, err
	}
	var points []string
	for _, e := range ParseInfo(string(info)) {
		if e.Point == dir || strings.HasPrefix(e.Point, dir+"/") {
			points = append(points, e.Point)
		}
	}
	// Deeper mount points have longer paths.
	slices.SortStableFunc(points, func(a, b string) int { return len(b) - len(a) })
	return points, nil
}
