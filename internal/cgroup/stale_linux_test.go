package cgroup

import (
	"testing"
	"time"
)

// TestRemoveStale: the groups the predicate names go from every
// hierarchy; the others stay.
func TestRemoveStale(t *testing.T) {
	f, opts := v1Tree(t)
	m := mustDetect(t, opts)
	for _, name := range []string{"run-dead", "run-live"} {
		if _, err := m.Create(name, Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.RemoveStale(time.Hour, func(string) bool { return true }); n != 0 {
		t.Errorf("removed %d groups younger than the least age", n)
	}
	if n := m.RemoveStale(0, func(name string) bool { return name == "run-dead" }); n != len(m.hiers) {
		t.Errorf("removed %d directories, want %d (one per hierarchy)", n, len(m.hiers))
	}
	for c := range v1Dirs {
		if f.exists(v1Base(c) + "/run-dead") {
			t.Errorf("%s/run-dead is still there", v1Base(c))
		}
		if !f.exists(v1Base(c) + "/run-live") {
			t.Errorf("%s/run-live was removed", v1Base(c))
		}
	}
}
