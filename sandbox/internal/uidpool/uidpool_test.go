package uidpool

import (
	"os"
	"testing"
)

// TestTakeSpreads checks that sandboxes started at once get uids of their
// own while there are enough, then share the least shared ones, and that
// a uid given back is handed out again.
func TestTakeSpreads(t *testing.T) {
	const n = 100
	p := New(5000, n)
	seen := map[int]bool{}
	for range n {
		uid := p.Take()
		if !p.Contains(uid) {
			t.Fatalf("uid %d outside the pool", uid)
		}
		if seen[uid] {
			t.Fatalf("uid %d handed out twice while free ones were left", uid)
		}
		seen[uid] = true
	}
	// All taken: the next ones share, one each, before any is shared by
	// three.
	shared := map[int]bool{}
	for range n {
		uid := p.Take()
		if shared[uid] {
			t.Fatalf("uid %d shared by three while others were shared by two", uid)
		}
		shared[uid] = true
	}
	p.Put(5007)
	p.Put(5007)
	if uid := p.Take(); uid != 5007 {
		t.Fatalf("took %d, want the unused 5007", uid)
	}
	// A uid not from the pool, or given back too often, changes nothing.
	p.Put(42)
	p.Put(5000 + n)
	for range 3 {
		p.Put(5008)
	}
	if uid := p.Take(); uid != 5008 {
		t.Fatalf("took %d, want the unused 5008", uid)
	}
	if uid := p.Take(); uid == 5008 {
		t.Fatal("took 5008 again while it is used and others are not")
	}
}

// TestHold checks that a held uid counts as used: Take passes it over.
func TestHold(t *testing.T) {
	p := New(10, 3)
	p.Hold(10)
	p.Hold(99) // not the pool's: ignored
	if a, b := p.Take(), p.Take(); a == 10 || b == 10 {
		t.Fatalf("took %d and %d: 10 is held", a, b)
	}
	p.Put(10)
	if uid := p.Take(); uid != 10 {
		t.Fatalf("took %d, want 10 once given back", uid)
	}
}

func TestShared(t *testing.T) {
	a, b := Shared(7000, 10), Shared(7000, 10)
	if a != b {
		t.Fatal("two pools for one range")
	}
	if Shared(7000, 10) == Shared(8000, 10) {
		t.Fatal("one pool for two ranges")
	}
}

// TestTakeForKeptWorkspace checks that a workspace an earlier run gave a
// uid of the pool keeps it, and that one owned by anybody else gets a
// fresh uid.
func TestTakeForKeptWorkspace(t *testing.T) {
	dir := t.TempDir()
	uid := os.Getuid()
	p := New(uid, 2)
	if got := p.TakeFor(dir); got != uid {
		t.Fatalf("workspace of uid %d got %d", uid, got)
	}
	// Held: a fresh Take passes it over.
	if got := p.Take(); got == uid {
		t.Fatalf("took %d, held by the workspace's run", got)
	}
	other := New(uid+1, 2)
	if got := other.TakeFor(dir); got == uid {
		t.Fatalf("a workspace of a uid not in the pool got that uid")
	}
	if got := other.TakeFor(""); !other.Contains(got) {
		t.Fatalf("no workspace: got %d outside the pool", got)
	}
}
