package session

import (
	"context"
	"errors"
	"testing"

	"github.com/coderunner/coderunner/execute"
)

// TestOwnersDoNotShareSessions: two callers with different credentials
// using the same session id get different sessions; neither reads the
// other's files nor ends the other's session, and a caller without a
// credential reaches neither.
func TestOwnersDoNotShareSessions(t *testing.T) {
	s, _ := open(t, Options{NoTmpfs: true})
	ex := &fileExecutor{}
	alice := WithOwner(context.Background(), "alice-digest")
	bob := WithOwner(context.Background(), "bob-digest")
	anon := context.Background()
	runAs := func(ctx context.Context, code string) string {
		t.Helper()
		id := "shared"
		res, err := s.Execute(ctx, ex, execute.Request{Code: code, SessionID: &id})
		if err != nil {
			t.Fatalf("%q: %v", code, err)
		}
		return res.Stdout
	}
	runAs(alice, "write secret 3")
	if got := runAs(alice, "read secret"); got != "\x00\x00\x00" {
		t.Fatalf("alice lost her file: %q", got)
	}
	if got := runAs(bob, "read secret"); got != "missing" {
		t.Errorf("bob read alice's file under the same session id: %q", got)
	}
	if got := runAs(anon, "read secret"); got != "missing" {
		t.Errorf("a caller without a credential read alice's file: %q", got)
	}
	if s.Len() != 3 {
		t.Errorf("Len() = %d, want 3 sessions", s.Len())
	}
	if err := s.DeleteContext(bob, "shared"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("shared"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteContext(bob, "shared"); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob's session ended twice: %v", err)
	}
	if got := runAs(alice, "read secret"); got != "\x00\x00\x00" {
		t.Errorf("the deletes of others ended alice's session: %q", got)
	}
	if err := s.DeleteContext(alice, "shared"); err != nil {
		t.Errorf("alice cannot end her session: %v", err)
	}
}
