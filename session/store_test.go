package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/internal/testutil"
)

// clock is a settable clock for idle times.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// open returns a Store in a test directory that measures by walking
// unless tmpfs is asked for, with a fake clock.
func open(t *testing.T, opts Options) (*Store, *clock) {
	t.Helper()
	c := &clock{now: time.Unix(1_700_000_000, 0)}
	if opts.Dir == "" {
		opts.Dir = filepath.Join(t.TempDir(), "sessions")
	}
	opts.now = c.Now
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, c
}

// fileExecutor is a fake executor: the code is "write NAME SIZE",
// "read NAME" (stdout is the content, or "missing") or "list".
type fileExecutor struct {
	inFlight, maxInFlight atomic.Int32
	// hold, when set, is called in the middle of every execution.
	hold func(req execute.Request)
}

func (f *fileExecutor) Execute(_ context.Context, req execute.Request) (*execute.Result, error) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxInFlight.Load()
		if n <= m || f.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	if f.hold != nil {
		f.hold(req)
	}
	res := &execute.Result{Status: execute.StatusSuccess, SessionID: req.SessionID}
	if req.Workspace == "" {
		return nil, errors.New("no workspace")
	}
	fields := strings.Fields(req.Code)
	switch fields[0] {
	case "write":
		var size int
		for _, c := range fields[2] {
			size = size*10 + int(c-'0')
		}
		if err := os.WriteFile(filepath.Join(req.Workspace, fields[1]), make([]byte, size), 0o644); err != nil {
			res.Status = execute.StatusExecutionError
			res.Stderr = err.Error()
		}
	case "read":
		b, err := os.ReadFile(filepath.Join(req.Workspace, fields[1]))
		if err != nil {
			res.Stdout = "missing"
		} else {
			res.Stdout = string(b)
		}
	}
	return res, nil
}

func run(t *testing.T, s *Store, ex Executor, id, code string) (*execute.Result, error) {
	t.Helper()
	return s.Execute(context.Background(), ex, execute.Request{Code: code, SessionID: &id})
}

func mustRun(t *testing.T, s *Store, ex Executor, id, code string) *execute.Result {
	t.Helper()
	res, err := run(t, s, ex, id, code)
	if err != nil {
		t.Fatalf("%s %q: %v", id, code, err)
	}
	return res
}

func TestPersistenceAndIsolation(t *testing.T) {
	for _, tmpfs := range []bool{false, true} {
		t.Run(map[bool]string{false: "walk", true: "tmpfs"}[tmpfs], func(t *testing.T) {
			if tmpfs {
				testutil.RequireRoot(t)
			}
			s, _ := open(t, Options{NoTmpfs: !tmpfs})
			ex := &fileExecutor{}
			mustRun(t, s, ex, "a", "write data 5")
			if got := mustRun(t, s, ex, "a", "read data").Stdout; got != "\x00\x00\x00\x00\x00" {
				t.Errorf("session a lost its file: stdout %q", got)
			}
			if got := mustRun(t, s, ex, "b", "read data").Stdout; got != "missing" {
				t.Errorf("session b sees session a's file: stdout %q", got)
			}
			if s.Len() != 2 {
				t.Errorf("Len() = %d, want 2", s.Len())
			}
		})
	}
}

func TestNoSession(t *testing.T) {
	s, _ := open(t, Options{NoTmpfs: true})
	var got execute.Request
	ex := executorFunc(func(_ context.Context, req execute.Request) (*execute.Result, error) {
		got = req
		return &execute.Result{}, nil
	})
	if _, err := s.Execute(context.Background(), ex, execute.Request{Code: "x"}); err != nil {
		t.Fatal(err)
	}
	if got.Workspace != "" || s.Len() != 0 {
		t.Errorf("a request without session got workspace %q (%d sessions)", got.Workspace, s.Len())
	}
	var nilStore *Store
	id := "a"
	if _, err := nilStore.Execute(context.Background(), ex, execute.Request{Code: "x", SessionID: &id}); !errors.Is(err, ErrDisabled) {
		t.Errorf("nil store: error %v, want ErrDisabled", err)
	}
	if _, err := nilStore.Execute(context.Background(), ex, execute.Request{Code: "x"}); err != nil {
		t.Errorf("nil store without session: %v", err)
	}
}

type executorFunc func(context.Context, execute.Request) (*execute.Result, error)

func (f executorFunc) Execute(ctx context.Context, req execute.Request) (*execute.Result, error) {
	return f(ctx, req)
}

func TestInvalidIDs(t *testing.T) {
	s, _ := open(t, Options{NoTmpfs: true})
	for _, id := range []string{"", "../x", "a/b", ".", "..", "a.1", strings.Repeat("x", 65), "é", "a b"} {
		if _, err := s.Acquire(context.Background(), id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Acquire(%q) = %v, want ErrInvalidID", id, err)
		}
		if err := s.Delete(id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidID", id, err)
		}
	}
}

func TestExpiry(t *testing.T) {
	s, c := open(t, Options{NoTmpfs: true, IdleTimeout: time.Minute})
	ex := &fileExecutor{}
	mustRun(t, s, ex, "old", "write f 1")
	l, err := s.Acquire(context.Background(), "old")
	if err != nil {
		t.Fatal(err)
	}
	dir := l.Dir()
	l.Release()
	mustRun(t, s, ex, "busy", "write f 1")
	busy, err := s.Acquire(context.Background(), "busy")
	if err != nil {
		t.Fatal(err)
	}

	c.Advance(59 * time.Second)
	s.Sweep()
	if s.Len() != 2 {
		t.Fatalf("a session expired before its idle timeout: %d left", s.Len())
	}
	c.Advance(2 * time.Second)
	s.Sweep()
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("expired session's workspace still there: %v", err)
	}
	if s.Len() != 1 {
		t.Errorf("%d sessions left, want only the busy one", s.Len())
	}
	if _, err := os.Lstat(busy.Dir()); err != nil {
		t.Errorf("a session in use expired: %v", err)
	}
	busy.Release()
	// The first call naming it is told that it expired, once; the next
	// starts it anew, without the old files.
	var ee *ExpiredError
	if _, err := run(t, s, ex, "old", "read f"); !errors.As(err, &ee) || !errors.Is(err, ErrNotFound) || ee.ID != "old" {
		t.Fatalf("call naming an expired session: %v, want an *ExpiredError", err)
	}
	if got := mustRun(t, s, ex, "old", "read f").Stdout; got != "missing" {
		t.Errorf("an expired session came back with its files: %q", got)
	}
}

func TestSessionCount(t *testing.T) {
	s, c := open(t, Options{NoTmpfs: true, MaxSessions: 2, IdleTimeout: time.Minute})
	ex := &fileExecutor{}
	mustRun(t, s, ex, "a", "list")
	mustRun(t, s, ex, "b", "list")
	_, err := run(t, s, ex, "c", "list")
	if !errors.Is(err, ErrTooManySessions) || !strings.Contains(err.Error(), "2 sessions are open") {
		t.Fatalf("third session: %v, want ErrTooManySessions", err)
	}
	mustRun(t, s, ex, "a", "list") // an existing session still works
	if err := s.Delete("a"); err != nil {
		t.Fatal(err)
	}
	mustRun(t, s, ex, "c", "list")
	// An idle session makes room for a new one without waiting for the
	// reaper.
	c.Advance(time.Hour)
	mustRun(t, s, ex, "d", "list")
}

func TestDiskCapWalk(t *testing.T) {
	s, _ := open(t, Options{NoTmpfs: true, MaxBytes: 1 << 20})
	ex := &fileExecutor{}
	mustRun(t, s, ex, "a", "write big 2000000")
	_, err := run(t, s, ex, "a", "list")
	if !errors.Is(err, ErrSessionFull) || !strings.Contains(err.Error(), `session "a" uses`) {
		t.Fatalf("run over the cap: %v, want ErrSessionFull naming the session", err)
	}
	mustRun(t, s, ex, "b", "list") // other sessions are not affected
	if err := s.Delete("a"); err != nil {
		t.Fatal(err)
	}
	mustRun(t, s, ex, "a", "list")
}

func TestFileCapWalk(t *testing.T) {
	s, _ := open(t, Options{NoTmpfs: true, MaxFiles: 10})
	l, err := s.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(l.Dir(), strings.Repeat("f", i+1)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l.Release()
	if _, err := s.Acquire(context.Background(), "a"); !errors.Is(err, ErrSessionFull) {
		t.Fatalf("session with too many files: %v, want ErrSessionFull", err)
	}
}

func TestDiskCapTmpfs(t *testing.T) {
	testutil.RequireRoot(t)
	s, _ := open(t, Options{MaxBytes: 1 << 20})
	ex := &fileExecutor{}
	res := mustRun(t, s, ex, "a", "write big 2000000")
	if res.Status != execute.StatusExecutionError || !strings.Contains(res.Stderr, "no space left") {
		t.Errorf("writing past the tmpfs cap: status %s, stderr %q", res.Status, res.Stderr)
	}
	// The kernel held the program to its cap: the session still works.
	mustRun(t, s, ex, "a", "write small 10")
}

func TestTotalCap(t *testing.T) {
	s, _ := open(t, Options{NoTmpfs: true, MaxBytes: 4 << 20, MaxTotalBytes: 3 << 20})
	ex := &fileExecutor{}
	mustRun(t, s, ex, "a", "write big 3500000")
	_, err := run(t, s, ex, "b", "list")
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("new session over the total cap: %v, want ErrDiskFull", err)
	}
}

func TestDelete(t *testing.T) {
	s, _ := open(t, Options{NoTmpfs: true})
	ex := &fileExecutor{}
	if err := s.Delete("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Delete of an unknown session: %v, want ErrNotFound", err)
	}
	mustRun(t, s, ex, "a", "write f 1")
	l, err := s.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	dir := l.Dir()

	// A call waiting for the session while it is deleted is refused.
	waited := make(chan error, 1)
	go func() {
		_, err := run(t, s, ex, "a", "list")
		waited <- err
	}()
	waitFor(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.sessions["a"].busy == 2
	})
	if err := s.Delete("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); err != nil {
		t.Errorf("workspace removed while a call still used it: %v", err)
	}
	l.Release()
	if err := <-waited; !errors.Is(err, ErrNotFound) {
		t.Errorf("call waiting on a deleted session: %v, want ErrNotFound", err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("workspace still there after the last call: %v", err)
	}
	if got := mustRun(t, s, ex, "a", "read f").Stdout; got != "missing" {
		t.Errorf("a deleted session's file survived: %q", got)
	}
}

// waitFor polls cond: the goroutine it waits for has no other way to say
// it has blocked.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestOneCallAtATime(t *testing.T) {
	s, _ := open(t, Options{NoTmpfs: true})
	ex := &fileExecutor{hold: func(execute.Request) { time.Sleep(2 * time.Millisecond) }}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := run(t, s, ex, "a", "list"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if m := ex.maxInFlight.Load(); m != 1 {
		t.Errorf("%d calls of one session ran at once, want 1", m)
	}
}

func TestSessionsRunTogether(t *testing.T) {
	s, _ := open(t, Options{NoTmpfs: true})
	var both sync.WaitGroup
	both.Add(2)
	ex := &fileExecutor{hold: func(execute.Request) {
		// Each call waits until the other has started: if sessions were
		// serialised, neither would return and the test would time out.
		both.Done()
		both.Wait()
	}}
	var wg sync.WaitGroup
	for _, id := range []string{"a", "b"} {
		wg.Go(func() {
			if _, err := run(t, s, ex, id, "list"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

func TestWaitCancelled(t *testing.T) {
	s, _ := open(t, Options{NoTmpfs: true})
	l, err := s.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Acquire(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with a cancelled context: %v", err)
	}
}

func TestCloseRemovesEverything(t *testing.T) {
	s, _ := open(t, Options{NoTmpfs: true})
	ex := &fileExecutor{}
	mustRun(t, s, ex, "a", "write f 10")
	l, err := s.Acquire(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(context.Background(), "c"); !errors.Is(err, ErrClosed) {
		t.Errorf("Acquire after Close: %v, want ErrClosed", err)
	}
	if _, err := os.Lstat(s.Dir()); err != nil {
		t.Errorf("instance directory removed while a call still runs: %v", err)
	}
	l.Release()
	if _, err := os.Lstat(s.Dir()); !os.IsNotExist(err) {
		t.Errorf("instance directory left after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestStaleCleanup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	live, _ := open(t, Options{Dir: dir, NoTmpfs: true})
	ex := &fileExecutor{}
	mustRun(t, live, ex, "a", "write f 1")

	// What a crashed Store leaves: an instance with an unheld lock, one
	// without a lock, and a lock file never renamed.
	for _, p := range []string{"i-dead/a.1/sub", "i-nolock/b.1"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"i-dead.lock", ".tmp-i-gone"} {
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	second, _ := open(t, Options{Dir: dir, NoTmpfs: true})
	for _, p := range []string{"i-dead", "i-dead.lock", "i-nolock", ".tmp-i-gone"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("stale %s left: %v", p, err)
		}
	}
	if got := mustRun(t, live, ex, "a", "read f").Stdout; got == "missing" {
		t.Error("opening a second Store removed a live Store's session")
	}
	if second.Dir() == live.Dir() {
		t.Error("two Stores share an instance directory")
	}
}

func TestStaleTmpfsCleanup(t *testing.T) {
	testutil.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "sessions")
	ws := filepath.Join(dir, "i-crashed", "a.1")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := mountTmpfs(ws, 1<<20, 100); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unmount(ws) })
	if err := os.WriteFile(filepath.Join(ws, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	open(t, Options{Dir: dir})
	if _, err := os.Lstat(filepath.Join(dir, "i-crashed")); !os.IsNotExist(err) {
		t.Errorf("stale tmpfs workspace left: %v", err)
	}
}

func TestUnsafeDir(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "target")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	writable := filepath.Join(base, "writable")
	if err := os.Mkdir(writable, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(writable, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{link, writable, "relative"} {
		if _, err := Open(Options{Dir: d}); err == nil {
			t.Errorf("Open accepted sessions directory %s", d)
		}
	}
}

// TestWorkspaceCappedForBackends: a session's workspace is a tmpfs the
// backends accept (capws.Check at the session's size), and its file count
// is capped by the kernel while a call runs, not only measured after it.
func TestWorkspaceCappedForBackends(t *testing.T) {
	testutil.RequireRoot(t)
	s, _ := open(t, Options{MaxBytes: 4 << 20, MaxFiles: 50})
	l, err := s.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := capws.Check(l.Dir(), 4<<20); err != nil {
		t.Fatalf("the session's workspace would be refused: %v", err)
	}
	var n int
	for n = 0; n < 1000; n++ {
		f, err := os.Create(filepath.Join(l.Dir(), fmt.Sprint("e", n)))
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("file %d: %v, want ENOSPC", n, err)
			}
			break
		}
		f.Close()
	}
	if n >= 50 {
		t.Fatalf("%d files in a workspace capped at 50", n)
	}
}
