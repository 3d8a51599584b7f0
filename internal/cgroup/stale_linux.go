package cgroup

import (
	"os"
	"path/filepath"
)

// RemoveStale removes, in every hierarchy, the groups under the Manager's
// base for which stale(name) is true and which hold no process (rmdir
// fails on a group that still does). It returns how many directories it
// removed. A process that was killed leaves its run groups, empty, behind;
// its successor calls this at start.
func (m *Manager) RemoveStale(stale func(name string) bool) int {
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
			if m.rmdir(filepath.Join(h.base, e.Name())) == nil {
				n++
			}
		}
	}
	return n
}
