package session

import "context"

type (
	ownerKey       struct{}
	maxSessionsKey struct{}
)

// WithOwner returns a context whose calls act on the sessions of owner:
// the same session id names a different session for each owner, so that
// one client cannot read, write or end another's workspace by guessing
// its id. The owner is an opaque string that identifies the caller's
// credential (the HTTP API uses a digest of its API token); the empty
// owner, the default, is the one of callers without a credential.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// Owner is the owner that ctx carries, or "".
func Owner(ctx context.Context) string {
	o, _ := ctx.Value(ownerKey{}).(string)
	return o
}

// key is the Store's key of session id for ctx's owner. Ids match
// ^[A-Za-z0-9_-]{1,64}$, so the separator cannot occur in one.
func key(ctx context.Context, id string) string {
	if o := Owner(ctx); o != "" {
		return o + "\x00" + id
	}
	return id
}

// WithMaxSessions returns a context whose calls may start a session only
// while ctx's owner holds fewer than n (an API key's max_sessions); n of
// zero or less means no cap but the Store's. A refusal is a *LimitError
// naming LimitOwnerSessions.
func WithMaxSessions(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, maxSessionsKey{}, n)
}

// maxSessions is the cap WithMaxSessions put in ctx, or 0.
func maxSessions(ctx context.Context) int {
	n, _ := ctx.Value(maxSessionsKey{}).(int)
	return n
}
