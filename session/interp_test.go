package session

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coderunner/coderunner/execute"
)

// closer counts its closes.
type closer struct{ n atomic.Int32 }

func (c *closer) Close() error { c.n.Add(1); return nil }

// attacher attaches a closer to each session it runs a cell in.
type attacher struct{ made []*closer }

func (a *attacher) Run(_ context.Context, l *Lease, _ execute.Request) (*execute.Result, error) {
	if l.Attached() == nil {
		c := &closer{}
		a.made = append(a.made, c)
		l.Attach(c)
	}
	return &execute.Result{Interpreter: true}, nil
}

func cell(t *testing.T, s *Store, id string) error {
	t.Helper()
	_, err := s.Execute(context.Background(), nil, execute.Request{Language: "python", Code: "1", SessionID: &id,
		Mode: execute.ModeInterpreter})
	return err
}

// What a session's interpreter leaves attached is closed when the session
// is deleted, expires, is restarted or the Store closes.
func TestAttachedClosed(t *testing.T) {
	s, c := open(t, Options{NoTmpfs: true, IdleTimeout: time.Minute})
	a := &attacher{}
	s.SetInterpreter(a)
	for _, id := range []string{"del", "exp", "res", "end"} {
		if err := cell(t, s, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := cell(t, s, "del"); err != nil || len(a.made) != 4 {
		t.Fatalf("a second call attached again: %v %d", err, len(a.made))
	}
	if err := s.Delete("del"); err != nil || a.made[0].n.Load() != 1 {
		t.Fatalf("delete: %v, closed %d", err, a.made[0].n.Load())
	}
	if err := s.Restart(context.Background(), "res"); err != nil || a.made[2].n.Load() != 1 {
		t.Fatalf("restart: %v, closed %d", err, a.made[2].n.Load())
	}
	if err := cell(t, s, "res"); err != nil || len(a.made) != 5 {
		t.Fatalf("after restart: %v %d", err, len(a.made))
	}
	c.Advance(30 * time.Second)
	_ = cell(t, s, "end")
	c.Advance(40 * time.Second)
	s.Sweep()
	if a.made[1].n.Load() != 1 || a.made[3].n.Load() != 0 {
		t.Fatalf("expiry closed %d and %d", a.made[1].n.Load(), a.made[3].n.Load())
	}
	_ = s.Close()
	if a.made[3].n.Load() != 1 || a.made[4].n.Load() != 1 {
		t.Fatal("Close left an interpreter")
	}
	if err := s.Restart(context.Background(), "nosuch"); !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrClosed) {
		t.Fatalf("restart of no session: %v", err)
	}
}

func TestInterpreterModeRefusals(t *testing.T) {
	s, _ := open(t, Options{NoTmpfs: true})
	id := "a"
	if _, err := s.Execute(context.Background(), nil, execute.Request{Code: "1", SessionID: &id, Mode: "repl"}); !errors.Is(err, execute.ErrInvalidMode) {
		t.Fatalf("unknown mode: %v", err)
	}
	if _, err := s.Execute(context.Background(), nil, execute.Request{Code: "1", Mode: execute.ModeInterpreter}); !errors.Is(err, execute.ErrInvalidMode) {
		t.Fatalf("no session: %v", err)
	}
	if err := cell(t, s, "a"); !errors.Is(err, ErrDisabled) {
		t.Fatalf("no interpreter: %v", err)
	}
	bad := "../x"
	s.SetInterpreter(&attacher{})
	if err := cell(t, s, bad); !errors.Is(err, execute.ErrInvalidSessionID) {
		t.Fatalf("bad id: %v", err)
	}
	var nilStore *Store
	if err := cell(t, nilStore, "a"); !errors.Is(err, ErrDisabled) {
		t.Fatalf("nil store: %v", err)
	}
}
