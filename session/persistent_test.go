package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/testutil"
)

// openPersistent returns a PersistentStore on dir (a new test directory
// when empty) with the clock c; two stores on one directory stand for two
// processes. Its workspaces are plain directories, even as root
// (TestPersistentTmpfs covers the tmpfs ones).
func openPersistent(t *testing.T, dir string, c *clock, opts Options) *PersistentStore {
	t.Helper()
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "sessions")
	}
	opts.Dir = dir
	opts.NoTmpfs = true
	opts.now = c.Now
	p, err := OpenPersistent(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newClock() *clock { return &clock{now: time.Now()} }

func acquire(t *testing.T, p *PersistentStore, id string) *PersistentLease {
	t.Helper()
	l, err := p.Acquire(context.Background(), id)
	if err != nil {
		t.Fatalf("acquire %q: %v", id, err)
	}
	return l
}

func TestPersistentKeepsFilesAcrossStores(t *testing.T) {
	c := newClock()
	first := openPersistent(t, "", c, Options{})
	l := acquire(t, first, "s1")
	if err := os.WriteFile(filepath.Join(l.Dir(), "notes.txt"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	l.Release()
	l.Release() // twice is harmless

	// Another process: a store opened afresh on the same directory.
	second := openPersistent(t, first.Dir(), c, Options{})
	l = acquire(t, second, "s1")
	b, err := os.ReadFile(filepath.Join(l.Dir(), "notes.txt"))
	if err != nil || string(b) != "kept" {
		t.Errorf("session s1 lost its file: %q, %v", b, err)
	}
	l.Release()

	other := acquire(t, second, "s2")
	defer other.Release()
	if _, err := os.Stat(filepath.Join(other.Dir(), "notes.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("session s2 sees s1's file: %v", err)
	}
}

func TestPersistentOneCallAtATime(t *testing.T) {
	c := newClock()
	a := openPersistent(t, "", c, Options{})
	b := openPersistent(t, a.Dir(), c, Options{})
	held := acquire(t, a, "s1")

	// While a holds s1, b cannot get it; it gets another session.
	ctx, cancel := context.WithTimeout(context.Background(), 3*lockPoll)
	defer cancel()
	if _, err := b.Acquire(ctx, "s1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second call in a busy session: %v, want it to wait", err)
	}
	acquire(t, b, "s2").Release()

	got := make(chan error, 1)
	go func() {
		l, err := b.Acquire(context.Background(), "s1")
		if err == nil {
			l.Release()
		}
		got <- err
	}()
	held.Release()
	if err := <-got; err != nil {
		t.Fatalf("waiting call: %v", err)
	}
}

func TestPersistentRefusesBadIDs(t *testing.T) {
	p := openPersistent(t, "", newClock(), Options{})
	outside := filepath.Join(filepath.Dir(p.Dir()), "escaped")
	for _, id := range []string{"", "..", "../escaped", "a/b", "/etc", "s1.lock", "s 1", "s\x00", strings.Repeat("a", 65), "ü"} {
		_, err := p.Acquire(context.Background(), id)
		if !errors.Is(err, ErrInvalidID) {
			t.Errorf("Acquire(%q) = %v, want ErrInvalidID", id, err)
		}
		if err := p.Delete(context.Background(), id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidID", id, err)
		}
	}
	if _, err := os.Lstat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a bad id made %s", outside)
	}
	entries, _ := os.ReadDir(p.Dir())
	if len(entries) != 0 {
		t.Errorf("bad ids left %d entries", len(entries))
	}
}

func TestPersistentCaps(t *testing.T) {
	c := newClock()
	p := openPersistent(t, "", c, Options{MaxSessions: 1, MaxBytes: 10_000})
	l := acquire(t, p, "s1")
	if err := os.WriteFile(filepath.Join(l.Dir(), "big"), make([]byte, 20_000), 0o600); err != nil {
		t.Fatal(err)
	}
	l.Release()
	if _, err := p.Acquire(context.Background(), "s2"); !errors.Is(err, ErrTooManySessions) {
		t.Errorf("second session: %v, want ErrTooManySessions", err)
	}
	if _, err := os.Lstat(p.lockPath("s2")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused session left its lock file: %v", err)
	}
	if _, err := p.Acquire(context.Background(), "s1"); !errors.Is(err, ErrSessionFull) {
		t.Errorf("session over its cap: %v, want ErrSessionFull", err)
	}

	total := openPersistent(t, "", c, Options{MaxTotalBytes: 10_000})
	l = acquire(t, total, "s1")
	if err := os.WriteFile(filepath.Join(l.Dir(), "big"), make([]byte, 15_000), 0o600); err != nil {
		t.Fatal(err)
	}
	l.Release()
	if _, err := total.Acquire(context.Background(), "s2"); !errors.Is(err, ErrDiskFull) {
		t.Errorf("new session past the total cap: %v, want ErrDiskFull", err)
	}
}

func TestPersistentExpiryAndDelete(t *testing.T) {
	c := newClock()
	p := openPersistent(t, "", c, Options{IdleTimeout: time.Hour})
	acquire(t, p, "old").Release()
	c.Advance(30 * time.Minute)
	acquire(t, p, "recent").Release()
	busy := acquire(t, p, "busy")
	// A workspace whose lock file is gone (a crash) is stale.
	if err := os.Mkdir(filepath.Join(p.Dir(), "orphan"), 0o700); err != nil {
		t.Fatal(err)
	}
	c.Advance(45 * time.Minute)

	// The next process sweeps when it opens the directory.
	p = openPersistent(t, p.Dir(), c, Options{IdleTimeout: time.Hour})
	for id, want := range map[string]bool{"old": false, "orphan": false, "recent": true, "busy": true} {
		_, err := os.Lstat(filepath.Join(p.Dir(), id))
		if got := err == nil; got != want {
			t.Errorf("session %s kept: %v, want %v", id, got, want)
		}
	}
	busy.Release()

	if err := p.Delete(context.Background(), "recent"); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(context.Background(), "recent"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	if _, err := os.Lstat(filepath.Join(p.Dir(), "recent")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("deleted session still there: %v", err)
	}
}

func TestPersistentExecute(t *testing.T) {
	p := openPersistent(t, "", newClock(), Options{})
	ex := &fileExecutor{}
	id := "s1"
	for _, code := range []string{"write a.txt 3", "read a.txt"} {
		res, err := p.Execute(context.Background(), ex, execute.Request{Code: code, SessionID: &id})
		if err != nil {
			t.Fatal(err)
		}
		if code == "read a.txt" && len(res.Stdout) != 3 {
			t.Errorf("the session's second call read %q", res.Stdout)
		}
	}
	// A call without a session runs as it is: this executor then has no
	// workspace.
	if _, err := p.Execute(context.Background(), ex, execute.Request{Code: "read a.txt"}); err == nil || err.Error() != "no workspace" {
		t.Errorf("call without a session: %v", err)
	}
}

// A cell of an interpreter cannot run in a session kept on disk: the
// process that would keep the interpreter ends with the call. It is
// refused, and never run as a program.
func TestPersistentRefusesInterpreter(t *testing.T) {
	p := openPersistent(t, "", newClock(), Options{})
	ran := false
	ex := executorFunc(func(context.Context, execute.Request) (*execute.Result, error) {
		ran = true
		return &execute.Result{}, nil
	})
	id := "nb"
	for _, req := range []execute.Request{
		{Language: "python", Code: "x = 1", SessionID: &id, Mode: execute.ModeInterpreter},
		{Language: "python", Code: "x = 1", Mode: execute.ModeInterpreter},
		{Language: "python", Code: "x = 1", SessionID: &id, Mode: "notebook"},
	} {
		_, err := p.Execute(context.Background(), ex, req)
		if !errors.Is(err, execute.ErrInvalidMode) || !strings.Contains(err.Error(), "coderunner serve") {
			t.Errorf("mode %q: %v", req.Mode, err)
		}
	}
	if ran {
		t.Fatal("a cell ran as a program")
	}
	if ids := p.ids(); len(ids) != 0 {
		t.Fatalf("a refused call started sessions %v", ids)
	}
}

// TestPersistentTmpfs checks that, as root, a session's workspace is a
// tmpfs capped at MaxBytes while a call runs (a call cannot fill the disk),
// that it keeps the files for another process's next call, and that ending
// the session unmounts it.
func TestPersistentTmpfs(t *testing.T) {
	testutil.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "sessions")
	open := func() *PersistentStore {
		p, err := OpenPersistent(Options{Dir: dir, MaxBytes: 1 << 20, MaxFiles: 64})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := open()
	t.Cleanup(func() {
		// Whatever happened, no mount is left in the test directory.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Delete(ctx, "s1")
	})
	l := acquire(t, p, "s1")
	defer l.Release()
	if !isMountPoint(l.Dir()) {
		t.Fatalf("the workspace of s1 is not a mount")
	}
	err := os.WriteFile(filepath.Join(l.Dir(), "big"), make([]byte, 2<<20), 0o600)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("writing 2 MiB into a 1 MiB session: %v, want ENOSPC", err)
	}
	if err := os.Remove(filepath.Join(l.Dir(), "big")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.Dir(), "kept"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	l.Release()

	// Another process's store: the same tmpfs, the same files.
	second := open()
	l = acquire(t, second, "s1")
	defer l.Release()
	if b, err := os.ReadFile(filepath.Join(l.Dir(), "kept")); err != nil || string(b) != "kept" {
		t.Errorf("the next call lost the file: %q, %v", b, err)
	}
	ws := l.Dir()
	l.Release()
	if err := second.Delete(context.Background(), "s1"); err != nil {
		t.Fatal(err)
	}
	if isMountPoint(ws) {
		t.Errorf("the tmpfs of an ended session is still mounted")
	}
	if _, err := os.Lstat(ws); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the workspace of an ended session is still there: %v", err)
	}
}
