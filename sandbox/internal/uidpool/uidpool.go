// Package uidpool hands out host uids to sandboxes, one each while there
// are enough. The kernel keeps some of its counts per user (inotify
// instances, queued signals, POSIX message queue bytes), and charges what
// a sandbox holds to its user and to the owner of its user namespace, up
// to the host: sandboxes sharing a host uid share those quotas, and one of
// them at its limits leaves the others none. Past the pool's size uids are
// shared, the least shared first.
package uidpool

import (
	"sync"
	"syscall"
)

// Pool is a range of host uids. It is safe for concurrent use.
type Pool struct {
	mu    sync.Mutex
	base  int
	users []int32
	next  int
}

// pools are the pools of this process, one per range: backends with the
// same range share one, so that they never hand out a uid twice at once
// either.
var pools struct {
	sync.Mutex
	byBase map[int]*Pool
}

// Shared returns the process's pool of the n uids from base, made on
// first use. n must be the same for every call with that base.
func Shared(base, n int) *Pool {
	pools.Lock()
	defer pools.Unlock()
	if pools.byBase == nil {
		pools.byBase = map[int]*Pool{}
	}
	p := pools.byBase[base]
	if p == nil {
		p = New(base, n)
		pools.byBase[base] = p
	}
	return p
}

// New returns a pool of the n uids from base, of its own.
func New(base, n int) *Pool {
	return &Pool{base: base, users: make([]int32, max(n, 1))}
}

// Contains reports whether uid is one of the pool's.
func (p *Pool) Contains(uid int) bool {
	return uid >= p.base && uid < p.base+len(p.users)
}

// Take returns the least used uid, the next in turn among equals, and
// counts it as used until Put.
func (p *Pool) Take() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.users)
	best := p.next
	for i := range n {
		j := (p.next + i) % n
		if p.users[j] < p.users[best] {
			best = j
		}
		if p.users[best] == 0 {
			break
		}
	}
	p.users[best]++
	p.next = (best + 1) % n
	return p.base + best
}

// Hold counts uid, one of the pool's that something already has (a
// workspace kept from one run to the next), as used until Put.
func (p *Pool) Hold(uid int) {
	if !p.Contains(uid) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.users[uid-p.base]++
}

// Put gives back a uid that Take or Hold counted.
func (p *Pool) Put(uid int) {
	if !p.Contains(uid) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := uid - p.base; p.users[i] > 0 {
		p.users[i]--
	}
}

// TakeFor returns the uid for a sandbox with the host workspace dir
// (empty for none): the pool's uid that owns dir, given it by an earlier
// run (a session's workspace kept between calls), so that the program may
// change what the earlier runs left; else the least used one. Either way
// it counts as used until Put. The sandboxed program cannot give the
// workspace's root to another user: only a backend chowns it.
func (p *Pool) TakeFor(dir string) int {
	var st syscall.Stat_t
	if dir != "" && syscall.Lstat(dir, &st) == nil && p.Contains(int(st.Uid)) {
		p.Hold(int(st.Uid))
		return int(st.Uid)
	}
	return p.Take()
}
