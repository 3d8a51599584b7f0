package httpapi

import (
	"context"
	"errors"
	"sync"
)

// errQueueFull refuses a request that finds every slot busy and the queue
// full.
var errQueueFull = errors.New("every running slot is busy and the queue is full")

// gate bounds the executions running at once and those waiting for a
// slot. Waiting requests are served in arrival order.
type gate struct {
	mu       sync.Mutex
	slots    int
	maxQueue int
	running  int
	waiters  []chan struct{}
	// onChange reports the running and waiting counts after each change.
	onChange func(running, waiting int)
}

func newGate(slots, maxQueue int, onChange func(running, waiting int)) *gate {
	if onChange == nil {
		onChange = func(int, int) {}
	}
	return &gate{slots: slots, maxQueue: maxQueue, onChange: onChange}
}

// acquire takes a slot, waiting in the queue when all are busy. It fails
// with errQueueFull at once when the queue is full too, or with the
// context's error when ctx ends while waiting. release gives the slot
// back; it must be called exactly once.
func (g *gate) acquire(ctx context.Context) (release func(), err error) {
	wait, err := g.reserve()
	if err != nil {
		return nil, err
	}
	return wait(ctx)
}

// reserve takes a slot, or a place in the queue, without waiting: it
// fails with errQueueFull at once when there is neither. wait then
// waits for the slot, as acquire does; it must be called exactly once.
func (g *gate) reserve() (wait func(ctx context.Context) (release func(), err error), err error) {
	g.mu.Lock()
	if g.running < g.slots && len(g.waiters) == 0 {
		g.running++
		g.changed()
		g.mu.Unlock()
		return func(context.Context) (func(), error) { return g.release, nil }, nil
	}
	if len(g.waiters) >= g.maxQueue {
		g.mu.Unlock()
		return nil, errQueueFull
	}
	ch := make(chan struct{})
	g.waiters = append(g.waiters, ch)
	g.changed()
	g.mu.Unlock()
	return func(ctx context.Context) (func(), error) { return g.await(ctx, ch) }, nil
}

// await waits for the slot handed to ch.
func (g *gate) await(ctx context.Context, ch chan struct{}) (release func(), err error) {
	select {
	case <-ch:
		return g.release, nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		for i, w := range g.waiters {
			if w == ch {
				g.waiters = append(g.waiters[:i], g.waiters[i+1:]...)
				g.changed()
				return nil, ctx.Err()
			}
		}
		// The slot was handed over as ctx ended: give it on.
		g.handOver()
		return nil, ctx.Err()
	}
}

// release frees a slot, handing it to the first waiter.
func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.handOver()
}

// handOver passes a held slot to the first waiter, or frees it. g.mu is
// held.
func (g *gate) handOver() {
	if len(g.waiters) > 0 {
		ch := g.waiters[0]
		g.waiters = g.waiters[1:]
		close(ch)
	} else {
		g.running--
	}
	g.changed()
}

func (g *gate) changed() { g.onChange(g.running, len(g.waiters)) }

// counts returns the running and waiting executions.
func (g *gate) counts() (running, waiting int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running, len(g.waiters)
}
