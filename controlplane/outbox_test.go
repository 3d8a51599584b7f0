package controlplane

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestOutboxGivesUpOnPermanent: a Permanent error ends the retries at
// once, removes the stored copy and is told to OnDone; an ordinary error
// is retried until the send succeeds.
func TestOutboxGivesUpOnPermanent(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	tries := map[string]int{}
	done := map[string]error{}
	o, err := NewOutbox(OutboxOptions{
		Dir:     dir,
		Backoff: []time.Duration{time.Millisecond},
		Send: func(_ context.Context, id string, _ []byte) error {
			mu.Lock()
			defer mu.Unlock()
			tries[id]++
			switch {
			case id == "gone":
				return Permanent(errors.New("never"))
			case tries[id] < 3:
				return errors.New("later")
			}
			return nil
		},
		OnDone: func(id string, _ int, err error) {
			mu.Lock()
			done[id] = err
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Put("gone", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := o.Put("later", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := o.Put("../x", []byte(`{}`)); err == nil {
		t.Fatal("a path as id was taken")
	}
	if err := o.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var perm *PermanentError
	if tries["gone"] != 1 || !errors.As(done["gone"], &perm) {
		t.Errorf("gone: %d tries, done %v", tries["gone"], done["gone"])
	}
	if tries["later"] != 3 || done["later"] != nil {
		t.Errorf("later: %d tries, done %v", tries["later"], done["later"])
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("files left: %v", left)
	}
}

// TestOutboxResendsAfterRestart: what one outbox could not deliver before
// it closed, the next one on the same directory delivers.
func TestOutboxResendsAfterRestart(t *testing.T) {
	dir := t.TempDir()
	first, err := NewOutbox(OutboxOptions{Dir: dir, Backoff: []time.Duration{time.Hour},
		Send: func(context.Context, string, []byte) error { return errors.New("down") }})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Put("r1", []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "r1.json")); err != nil {
		t.Fatalf("not stored: %v", err)
	}
	got := make(chan string, 1)
	second, err := NewOutbox(OutboxOptions{Dir: dir,
		Send: func(_ context.Context, id string, body []byte) error { got <- id + string(body); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if n := second.Start(); n != 1 {
		t.Fatalf("Start found %d", n)
	}
	if g := <-got; g != `r1{"a":1}` {
		t.Fatalf("delivered %q", g)
	}
	if err := second.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}
