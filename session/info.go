package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coderunner/coderunner/execute"
)

// Info describes a session as its owner may see it.
type Info struct {
	// ID is the session's id.
	ID string `json:"session_id"`
	// CreatedAt is when its first call started it.
	CreatedAt time.Time `json:"created_at"`
	// LastUsedAt is when its last call started or ended.
	LastUsedAt time.Time `json:"last_used_at"`
	// ExpiresAt is when it ends unless a call uses it first. While a
	// call runs in it, it is the end of the idle timeout counted from now:
	// a session in use never expires.
	ExpiresAt time.Time `json:"expires_at"`
	// IdleTimeoutSeconds is its idle timeout.
	IdleTimeoutSeconds int64 `json:"idle_timeout_seconds"`
	// DiskUsedBytes is what its workspace held when last measured, at
	// the start and the end of each call.
	DiskUsedBytes int64 `json:"disk_used_bytes"`
	// InUse is true while a call runs in it or waits for it.
	InUse bool `json:"in_use"`
}

// Info describes the session id of ctx's owner. It fails with
// ErrInvalidID, an *ExpiredError for a session that expired recently, or
// ErrNotFound.
func (s *Store) Info(ctx context.Context, id string) (Info, error) {
	if err := execute.ValidateSessionID(id); err != nil {
		return Info{}, err
	}
	k := key(ctx, id)
	s.mu.Lock()
	now := s.opts.now()
	gone := s.sweepLocked(now)
	e := s.sessions[k]
	var info Info
	if e != nil {
		info = s.infoLocked(e, now)
	}
	at, expired := s.expiredLocked(k, now)
	s.mu.Unlock()
	for _, g := range gone {
		s.destroy(g)
	}
	switch {
	case e != nil:
		return info, nil
	case expired:
		return Info{}, &ExpiredError{ID: id, At: at}
	}
	return Info{}, fmt.Errorf("%w: %q", ErrNotFound, id)
}

// List describes the sessions of ctx's owner, in the order of their ids.
func (s *Store) List(ctx context.Context) []Info {
	owner := Owner(ctx)
	s.mu.Lock()
	now := s.opts.now()
	gone := s.sweepLocked(now)
	out := []Info{}
	for _, e := range s.sessions {
		if e.owner == owner {
			out = append(out, s.infoLocked(e, now))
		}
	}
	s.mu.Unlock()
	for _, g := range gone {
		s.destroy(g)
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// infoLocked describes e; s.mu is held.
func (s *Store) infoLocked(e *entry, now time.Time) Info {
	expires := e.lastUsed.Add(e.ttl)
	if e.busy > 0 {
		expires = now.Add(e.ttl)
	}
	return Info{
		ID:                 e.id,
		CreatedAt:          e.created.UTC(),
		LastUsedAt:         e.lastUsed.UTC(),
		ExpiresAt:          expires.UTC(),
		IdleTimeoutSeconds: int64(e.ttl / time.Second),
		DiskUsedBytes:      e.used,
		InUse:              e.busy > 0,
	}
}
