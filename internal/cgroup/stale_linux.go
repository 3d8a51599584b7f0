package cgroup

import (
	"os"
	"path/filepath"
	"time"
)

// RemoveStale removes, in every hierarchy, the groups under the Manager's
// base older than minAge for which stale(name) is true and which hold no
// process (rmdir fails on a group that still does). It returns how many
// directories it removed. A process that was killed leaves its run
// groups, empty, behind; its successor calls this at start. minAge spares
// a group another process has just made and not yet moved a process into.
func (m *Manager) RemoveStale(minAge time.Duration, stale func(name string) bool) int {
	n := 0
	for _, h := range m.hiers {
		ents, err := os.ReadDir(h.base)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.IsDir() || validateName(e.Name()) != nil || !stale(e.Name()) {
				continue
			}
			if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < minAge {
				continue
			}
			dir := filepath.Join(h.base, e.Name())
			// A v2 group a peak reset gave a child (see ResetPeak):
			// the child first.
			if kids, err := os.ReadDir(dir); err == nil {
				for _, k := range kids {
					if k.IsDir() {
						_ = m.rmdir(filepath.Join(dir, k.Name()))
					}
				}
			}
			if m.rmdir(dir) == nil {
				n++
			}
		}
	}
	return n
}
