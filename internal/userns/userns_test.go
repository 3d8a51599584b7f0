package userns

import (
	"os"
	"strings"
	"testing"
)

func TestCovers(t *testing.T) {
	for _, tc := range []struct {
		name, m      string
		first, count int
		ok           bool
	}{
		{"the initial namespace", "         0          0 4294967295\n", 1_000_000, 3000, true},
		{"a pod's 65536 ids", "         0     131072      65536\n", 1_000_000, 3000, false},
		{"a pod's 65536 ids, within", "0 131072 65536\n", 1000, 1000, true},
		{"enough ids per pod", "0 1245184 1245184\n", 1_201_000, 1000, true},
		{"one short", "0 1245184 1201999\n", 1_201_000, 1000, false},
		{"the range's first id missing", "1000001 5 2000\n", 1_000_000, 1000, false},
		{"two extents that meet", "1000500 9000000 500\n0 100000 1000500\n", 1_000_000, 1000, true},
		{"two extents with a gap", "0 100000 1000500\n1000501 9000000 499\n", 1_000_000, 1000, false},
		{"no map at all", "", 0, 1, false},
		{"an unreadable line", "0 0\n", 0, 1, false},
		{"a negative number", "0 -1 5\n", 0, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := covers(tc.m, tc.first, tc.count)
			if (err == nil) != tc.ok {
				t.Fatalf("covers(%q, %d, %d) = %v, want ok=%v", tc.m, tc.first, tc.count, err, tc.ok)
			}
			if err != nil {
				t.Log(err)
			}
		})
	}
}

func TestIDsFor(t *testing.T) {
	for last, want := range map[int]int{0: 65536, 65535: 65536, 65536: 131072, 1_002_999: 1_048_576, 1_201_999: 1_245_184} {
		if got := IDsFor(last); got != want {
			t.Errorf("IDsFor(%d) = %d, want %d", last, got, want)
		}
	}
}

// TestMapped reads this process's own maps: whatever namespace the test
// runs in maps its own ids, and no namespace maps ids past 2^32-1.
func TestMapped(t *testing.T) {
	uid := os.Getuid()
	if err := Mapped(uid, 1); err != nil {
		t.Fatalf("this process's own uid %d: %v", uid, err)
	}
	err := Mapped(4_294_967_295, 2)
	if err == nil || !strings.Contains(err.Error(), "userNamespaces.idsPerPod") {
		t.Fatalf("ids past the last one: %v, want an error naming idsPerPod", err)
	}
}
