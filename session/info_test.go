package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/execute"
)

// runAs runs code in session id as owner, asking for ttl.
func runAs(s *Store, ex Executor, owner, id, code string, ttl time.Duration) error {
	ctx := WithOwner(context.Background(), owner)
	_, err := s.Execute(ctx, ex, execute.Request{Code: code, SessionID: &id, SessionTTL: ttl})
	return err
}

func TestInfoAndList(t *testing.T) {
	s, c := open(t, Options{NoTmpfs: true, IdleTimeout: time.Minute})
	ex := &fileExecutor{}
	start := c.Now()
	if err := runAs(s, ex, "alice", "b", "write f 1000", 0); err != nil {
		t.Fatal(err)
	}
	c.Advance(10 * time.Second)
	if err := runAs(s, ex, "alice", "a", "list", 0); err != nil {
		t.Fatal(err)
	}
	if err := runAs(s, ex, "bob", "c", "list", 0); err != nil {
		t.Fatal(err)
	}
	alice := WithOwner(context.Background(), "alice")
	list := s.List(alice)
	if len(list) != 2 || list[0].ID != "a" || list[1].ID != "b" {
		t.Fatalf("alice lists %+v, want her sessions a and b only", list)
	}
	b := list[1]
	if !b.CreatedAt.Equal(start) || !b.LastUsedAt.Equal(start) || !b.ExpiresAt.Equal(start.Add(time.Minute)) ||
		b.IdleTimeoutSeconds != 60 || b.DiskUsedBytes < 1000 || b.InUse {
		t.Errorf("session b: %+v", b)
	}
	if got := s.List(WithOwner(context.Background(), "bob")); len(got) != 1 || got[0].ID != "c" {
		t.Errorf("bob lists %+v", got)
	}
	if got := s.List(context.Background()); len(got) != 0 {
		t.Errorf("the owner without a credential lists %+v", got)
	}
	// Bob cannot see alice's session by its id.
	if _, err := s.Info(WithOwner(context.Background(), "bob"), "a"); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrExpired) {
		t.Errorf("bob's Info of alice's session: %v, want ErrNotFound", err)
	}
	if info, err := s.Info(alice, "a"); err != nil || info.ID != "a" || !info.CreatedAt.Equal(start.Add(10*time.Second)) {
		t.Errorf("Info(a) = %+v, %v", info, err)
	}
	// In use, it expires an idle timeout after now at the earliest.
	l, err := s.Acquire(alice, "a")
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(5 * time.Minute)
	if info, _ := s.Info(alice, "a"); !info.InUse || !info.ExpiresAt.Equal(c.Now().Add(time.Minute)) {
		t.Errorf("in use: %+v", info)
	}
	l.Release()
	if _, err := s.Info(alice, "a"); err != nil {
		t.Errorf("a session expired as its call ended: %v", err)
	}
	if _, err := s.Info(alice, "zz"); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrExpired) {
		t.Errorf("Info of an unknown id: %v", err)
	}
	if _, err := s.Info(alice, "../x"); !errors.Is(err, ErrInvalidID) {
		t.Errorf("Info of an invalid id: %v", err)
	}
}

func TestSessionTTL(t *testing.T) {
	s, c := open(t, Options{NoTmpfs: true, IdleTimeout: time.Minute, MaxIdleTimeout: time.Hour})
	ex := &fileExecutor{}
	for _, ttl := range []time.Duration{time.Hour + time.Second, 500 * time.Millisecond, -time.Second} {
		err := runAs(s, ex, "", "x", "list", ttl)
		if !errors.Is(err, ErrInvalidTTL) {
			t.Errorf("ttl %s: %v, want ErrInvalidTTL", ttl, err)
		}
	}
	if err := runAs(s, ex, "", "x", "list", time.Hour+time.Second); err == nil || !strings.Contains(err.Error(), "sessions.max_idle_timeout") {
		t.Errorf("the refusal does not name the setting: %v", err)
	}
	if s.Len() != 0 {
		t.Errorf("a refused ttl started a session")
	}
	if _, err := s.Execute(context.Background(), ex, execute.Request{Code: "list", SessionTTL: time.Minute}); !errors.Is(err, ErrInvalidTTL) {
		t.Errorf("a ttl without a session: %v", err)
	}
	if err := runAs(s, ex, "", "long", "write f 1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := runAs(s, ex, "", "short", "write f 1", 0); err != nil {
		t.Fatal(err)
	}
	c.Advance(30 * time.Minute)
	// No Sweep: a session past its idle timeout is expired when next
	// named, whether the reaper came by or not.
	if info, err := s.Info(context.Background(), "long"); err != nil || info.IdleTimeoutSeconds != 3600 {
		t.Errorf("the long session: %+v %v", info, err)
	}
	var ee *ExpiredError
	if _, err := s.Info(context.Background(), "short"); !errors.As(err, &ee) || !ee.At.Equal(c.Now().Add(-29*time.Minute)) {
		t.Errorf("the short session: %v (at %v), want expired 29 min ago", err, ee)
	}
	// A later call's ttl replaces the session's.
	if err := runAs(s, ex, "", "long", "list", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	c.Advance(3 * time.Minute)
	if err := runAs(s, ex, "", "long", "read f", 0); !errors.Is(err, ErrExpired) {
		t.Errorf("after its new ttl: %v, want ErrExpired", err)
	}
	if s.MaxIdleTimeout() != time.Hour {
		t.Errorf("MaxIdleTimeout() = %s", s.MaxIdleTimeout())
	}
}

func TestExpiredRemembered(t *testing.T) {
	s, c := open(t, Options{NoTmpfs: true, IdleTimeout: time.Minute, RememberExpired: 3, RememberExpiredFor: 10 * time.Minute})
	ex := &fileExecutor{}
	for i := range 5 {
		if err := runAs(s, ex, "", fmt.Sprint("s", i), "list", 0); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Second)
	}
	c.Advance(time.Minute)
	s.Sweep()
	// Bounded in number: the three latest are remembered, the older two
	// are unknown ids now.
	for i := range 5 {
		_, err := s.Info(context.Background(), fmt.Sprint("s", i))
		if want := i >= 2; errors.Is(err, ErrExpired) != want || !errors.Is(err, ErrNotFound) {
			t.Errorf("s%d: %v, want expired %v", i, err, want)
		}
	}
	// Deleting an expired session says it expired and forgets it.
	if err := s.Delete("s4"); !errors.Is(err, ErrExpired) {
		t.Errorf("Delete(s4): %v, want ErrExpired", err)
	}
	if err := s.Delete("s4"); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrExpired) {
		t.Errorf("second Delete(s4): %v, want ErrNotFound", err)
	}
	// Another owner's call with the same id is not told of it.
	if err := runAs(s, ex, "other", "s3", "list", 0); err != nil {
		t.Errorf("another owner's s3: %v", err)
	}
	// Bounded in time.
	c.Advance(10 * time.Minute)
	if _, err := s.Info(context.Background(), "s3"); errors.Is(err, ErrExpired) {
		t.Errorf("s3 remembered past RememberExpiredFor: %v", err)
	}
	if err := runAs(s, ex, "", "s2", "list", 0); err != nil {
		t.Errorf("a call naming a long-forgotten expiry: %v", err)
	}
	// A deleted session is not expired: it is unknown.
	if err := s.Delete("s2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Info(context.Background(), "s2"); errors.Is(err, ErrExpired) || !errors.Is(err, ErrNotFound) {
		t.Errorf("a deleted session: %v, want ErrNotFound", err)
	}
}

func TestOwnerSessionCap(t *testing.T) {
	s, c := open(t, Options{NoTmpfs: true, IdleTimeout: time.Minute, MaxSessions: 10})
	ex := &fileExecutor{}
	alice := WithMaxSessions(WithOwner(context.Background(), "alice"), 2)
	runCapped := func(ctx context.Context, id string) error {
		_, err := s.Execute(ctx, ex, execute.Request{Code: "list", SessionID: &id})
		return err
	}
	for _, id := range []string{"a", "b"} {
		if err := runCapped(alice, id); err != nil {
			t.Fatal(err)
		}
	}
	c.Advance(20 * time.Second)
	if err := runCapped(alice, "a"); err != nil {
		t.Errorf("an existing session over the cap: %v", err)
	}
	err := runCapped(alice, "c")
	var le *LimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrTooManySessions) || le.Limit != LimitOwnerSessions || le.Max != 2 {
		t.Fatalf("third session of alice: %v, want a LimitError of max_sessions", err)
	}
	// Session b, idle for 20 s of its 60, frees room first.
	if le.RetryAfter != 40*time.Second {
		t.Errorf("RetryAfter = %s, want 40s", le.RetryAfter)
	}
	// Another owner is not held by alice's cap, and the cap counts only
	// alice's sessions.
	bob := WithMaxSessions(WithOwner(context.Background(), "bob"), 1)
	if err := runCapped(bob, "c"); err != nil {
		t.Errorf("bob's first session: %v", err)
	}
	if err := s.DeleteContext(alice, "b"); err != nil {
		t.Fatal(err)
	}
	if err := runCapped(alice, "c"); err != nil {
		t.Errorf("alice after ending one: %v", err)
	}
	// An idle session expires to make room without waiting for the
	// reaper.
	c.Advance(2 * time.Minute)
	if err := runCapped(alice, "d"); err != nil {
		t.Errorf("alice after her sessions expired: %v", err)
	}
	// The server's cap is a LimitError too, naming its setting.
	s2, _ := open(t, Options{NoTmpfs: true, MaxSessions: 1})
	if _, err := s2.Execute(context.Background(), ex, execute.Request{Code: "list", SessionID: ptr("x")}); err != nil {
		t.Fatal(err)
	}
	_, err = s2.Execute(context.Background(), ex, execute.Request{Code: "list", SessionID: ptr("y")})
	if !errors.As(err, &le) || le.Limit != LimitServerSessions {
		t.Errorf("server cap: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
