package runner

import (
	"context"
	"sync"
)

// flightGroup runs one compilation per key at a time: concurrent Prepares
// of the same source wait for the first instead of compiling it again.
type flightGroup struct {
	mu    sync.Mutex
	calls map[string]*flight
}

type flight struct {
	done chan struct{}
	err  error
}

// do runs fn as the leader when no call of key is under way and returns
// its result with leader true. Otherwise it waits for the call under way
// (or for ctx) and returns its error with leader false: the caller then
// takes the entry from the cache itself.
func (g *flightGroup) do(ctx context.Context, key string, fn func() (*entry, error)) (e *entry, leader bool, err error) {
	g.mu.Lock()
	if g.calls == nil {
		g.calls = map[string]*flight{}
	}
	if f, ok := g.calls[key]; ok {
		g.mu.Unlock()
		select {
		case <-f.done:
			return nil, false, f.err
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	f := &flight{done: make(chan struct{})}
	g.calls[key] = f
	g.mu.Unlock()

	defer func() {
		g.mu.Lock()
		delete(g.calls, key)
		g.mu.Unlock()
		close(f.done)
	}()
	e, f.err = fn()
	return e, true, f.err
}
