package httpapi

import (
	"net/http"
	"testing"
)

// TestQueueDefaults: the default queue holds max(64, 16 × slots) waiting
// requests, so that a burst of fifty clients on a two-core machine waits
// instead of being refused.
func TestQueueDefaults(t *testing.T) {
	for _, c := range []struct{ slots, queue, want int }{
		{1, 0, 64}, {2, 0, 64}, {4, 0, 64}, {8, 0, 128}, {2, 7, 7},
	} {
		s, err := New(Options{Executor: newFakeExecutor(), MaxConcurrent: c.slots, QueueSize: c.queue})
		if err != nil {
			t.Fatal(err)
		}
		if s.slots != c.slots || s.queue != c.want {
			t.Errorf("slots %d, queue_size %d: got %d slots and a queue of %d, want a queue of %d", c.slots, c.queue, s.slots, s.queue, c.want)
		}
	}
}

// TestEvery503HasRetryAfter: a server that is starting answers /health
// and executions 503, each with Retry-After (the full queue's 503 is
// TestQueue's).
func TestEvery503HasRetryAfter(t *testing.T) {
	s, err := New(Options{Executor: newFakeExecutor(), Runner: fakeRunner{}, Judge: fakeJudge{}, MaxConcurrent: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/health", ""},
		{"POST", "/execute", validExecute},
	} {
		rec := do(t, s, c.method, c.path, c.body, nil)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s %s while starting: %d, Retry-After %q", c.method, c.path, rec.Code, rec.Header().Get("Retry-After"))
		}
	}
}
