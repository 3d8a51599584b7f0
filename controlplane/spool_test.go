package controlplane

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSpoolBounded: with the control plane down, the results waiting for
// it are counted in number and bytes, and SpoolFull turns true at either
// bound; once the control plane is back they drain to nothing.
func TestSpoolBounded(t *testing.T) {
	var up atomic.Bool
	f := newFakeCP(t, func(int, call) int {
		if up.Load() {
			return http.StatusOK
		}
		return http.StatusServiceUnavailable
	})
	r, _ := newReporter(t, f, t.TempDir(), func(o *Options) { o.MaxSpool = 3; o.MaxSpoolBytes = 1 << 20 })
	for i, id := range []string{"a", "b", "c"} {
		if r.SpoolFull() {
			t.Fatalf("full after %d results", i)
		}
		if err := r.Result(id, map[string]string{"x": strings.Repeat("y", 100)}); err != nil {
			t.Fatal(err)
		}
	}
	n, b := r.Spool()
	if !r.SpoolFull() || n != 3 || b < 300 {
		t.Fatalf("after 3 undelivered results: full %v, %d results, %d bytes", r.SpoolFull(), n, b)
	}
	up.Store(true)
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, b := r.Spool(); r.SpoolFull() || n != 0 || b != 0 {
		t.Fatalf("after delivery: full %v, %d results, %d bytes", r.SpoolFull(), n, b)
	}

	// The byte bound alone.
	up.Store(false)
	r2, _ := newReporter(t, f, t.TempDir(), func(o *Options) { o.MaxSpool = 100; o.MaxSpoolBytes = 1000 })
	if err := r2.Result("big", map[string]string{"x": strings.Repeat("y", 1000)}); err != nil {
		t.Fatal(err)
	}
	if !r2.SpoolFull() {
		t.Fatal("a result over MaxSpoolBytes does not fill the spool")
	}
}
