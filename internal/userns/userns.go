// Package userns tells whether a range of ids exists in the user
// namespace this process runs in.
//
// As root, the sandbox backends run user code as uids far above the ones
// distributions hand out (from 1000000). Root of a user namespace of its
// own, as a Kubernetes pod with hostUsers: false is, may use only the ids
// that namespace maps, 65536 of them by default: a setresuid or a uid map
// naming any other fails with EINVAL, which says nothing of why. Mapped
// says why, before any sandbox is started.
package userns

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// idsPerPodUnit is the unit of the kubelet's userNamespaces.idsPerPod.
const idsPerPodUnit = 65536

// Mapped returns nil when every id from first to first+count-1 is mapped
// in this process's user namespace, both as a uid and as a gid, and else
// an error that names the range, what the namespace maps, and the
// kubelet's setting that would give a pod enough.
func Mapped(first, count int) error {
	for _, name := range []string{"uid_map", "gid_map"} {
		b, err := os.ReadFile("/proc/self/" + name)
		if err != nil {
			return fmt.Errorf("unable to read the user namespace's %s: %w", name, err)
		}
		if err := covers(string(b), first, count); err != nil {
			return fmt.Errorf("ids %d to %d are not all mapped in this process's user namespace (%s: %w): as root of a user namespace of its own, a Kubernetes pod with hostUsers: false, it needs at least %d ids (the kubelet's userNamespaces.idsPerPod)",
				first, first+count-1, name, err, IDsFor(first+count-1))
		}
	}
	return nil
}

// IDsFor is the least kubelet userNamespaces.idsPerPod (a multiple of
// 65536) that maps every id from 0 to last.
func IDsFor(last int) int {
	return (last/idsPerPodUnit + 1) * idsPerPodUnit
}

// extent is one line of a uid or gid map: count ids from first inside.
type extent struct{ first, count int }

// covers checks that the map m (the text of /proc/PID/uid_map: lines of
// "inside outside count") maps every id inside from first to
// first+count-1.
func covers(m string, first, count int) error {
	var exts []extent
	total := 0
	for _, line := range strings.Split(m, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return fmt.Errorf("unreadable map line %q", line)
		}
		var v [3]int
		for i, s := range f {
			n, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				return fmt.Errorf("unreadable map line %q", line)
			}
			v[i] = int(n)
		}
		exts = append(exts, extent{v[0], v[2]})
		total += v[2]
	}
	slices.SortFunc(exts, func(a, b extent) int { return a.first - b.first })
	next, end := first, first+count
	for _, e := range exts {
		if e.first <= next && next < e.first+e.count {
			next = e.first + e.count
		}
	}
	if next < end {
		return fmt.Errorf("id %d is not mapped; the namespace maps %d ids", next, total)
	}
	return nil
}
