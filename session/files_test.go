package session

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/internal/wsfile"
)

func readAll(t *testing.T, s *Store, ctx context.Context, id, p string) string {
	t.Helper()
	f, err := s.OpenFile(ctx, id, p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil || int64(len(b)) != f.Size {
		t.Fatalf("read %d bytes of %d: %v", len(b), f.Size, err)
	}
	return string(b)
}

func TestFiles(t *testing.T) {
	s, _ := open(t, Options{NoTmpfs: true})
	ctx := context.Background()
	// Reading, listing or deleting never starts a session.
	if _, err := s.OpenFile(ctx, "s1", "a.txt"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("OpenFile of a new session: %v", err)
	}
	if _, err := s.ListFiles(ctx, "s1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ListFiles of a new session: %v", err)
	}
	if err := s.DeleteFile(ctx, "s1", "a.txt"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("DeleteFile of a new session: %v", err)
	}
	if s.Len() != 0 {
		t.Fatal("a session was started")
	}
	// Writing does.
	f, err := s.WriteFile(ctx, "s1", "dir/a.txt", strings.NewReader("hello"))
	if err != nil || f != (File{Path: "dir/a.txt", Size: 5, SHA256: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"}) {
		t.Fatalf("WriteFile = %+v, %v", f, err)
	}
	if got := readAll(t, s, ctx, "s1", "dir/a.txt"); got != "hello" {
		t.Fatalf("read %q", got)
	}
	list, err := s.ListFiles(ctx, "s1")
	if err != nil || len(list) != 1 || list[0].Path != "dir/a.txt" || list[0].Size != 5 ||
		list[0].SHA256 != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Fatalf("ListFiles = %+v, %v", list, err)
	}
	info, err := s.Info(ctx, "s1")
	if err != nil || info.DiskUsedBytes == 0 {
		t.Fatalf("the write was not measured: %+v, %v", info, err)
	}
	if err := s.DeleteFile(ctx, "s1", "dir/a.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenFile(ctx, "s1", "dir/a.txt"); !errors.Is(err, wsfile.ErrNotFound) {
		t.Fatalf("after DeleteFile: %v", err)
	}
	// Bad input is refused before anything happens.
	for _, p := range []string{"../x", "/etc/passwd", "a\x00b", ""} {
		if _, err := s.WriteFile(ctx, "s2", p, strings.NewReader("x")); !errors.Is(err, wsfile.ErrInvalidPath) {
			t.Errorf("WriteFile(%q) = %v", p, err)
		}
	}
	if _, err := s.WriteFile(ctx, "bad id", "a", strings.NewReader("x")); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("a bad id: %v", err)
	}
	if s.Len() != 1 {
		t.Fatalf("%d sessions, want 1", s.Len())
	}
}

// One owner never reaches another's files.
func TestFilesOwners(t *testing.T) {
	s, _ := open(t, Options{NoTmpfs: true})
	alice, bob := WithOwner(context.Background(), "alice"), WithOwner(context.Background(), "bob")
	if _, err := s.WriteFile(alice, "shared", "secret.txt", strings.NewReader("alice's")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenFile(bob, "shared", "secret.txt"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("bob read alice's file: %v", err)
	}
	if _, err := s.ListFiles(bob, "shared"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("bob listed alice's files: %v", err)
	}
	if err := s.DeleteFile(bob, "shared", "secret.txt"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("bob deleted alice's file: %v", err)
	}
	// Bob's write makes a session of his own.
	if _, err := s.WriteFile(bob, "shared", "secret.txt", strings.NewReader("bob's")); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, s, alice, "shared", "secret.txt"); got != "alice's" {
		t.Fatalf("alice reads %q", got)
	}
}

// A file operation waits for the call running in the session, with its
// context.
func TestFilesWaitForTheRunningCall(t *testing.T) {
	s, _ := open(t, Options{NoTmpfs: true})
	ctx := context.Background()
	if _, err := s.WriteFile(ctx, "s", "a", strings.NewReader("1")); err != nil {
		t.Fatal(err)
	}
	lease, err := s.Acquire(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := s.WriteFile(cctx, "s", "a", strings.NewReader("2"))
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("WriteFile while a call runs = %v, want it to wait until cancelled", err)
	}
	if _, err := s.OpenFile(cctx, "s", "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("OpenFile while a call runs = %v", err)
	}
	go func() {
		_, err := s.WriteFile(ctx, "s", "a", strings.NewReader("3"))
		done <- err
	}()
	lease.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// An open file holds the session: the next call waits for Close.
	f, err := s.OpenFile(ctx, "s", "a")
	if err != nil {
		t.Fatal(err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer tcancel()
	if _, err := s.Acquire(tctx, "s"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire while a file is open = %v", err)
	}
	_ = f.Close()
	_ = f.Close()
	l, err := s.Acquire(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
}

// A session that expired says so, and stays remembered for its next call.
func TestFilesExpired(t *testing.T) {
	s, c := open(t, Options{NoTmpfs: true, IdleTimeout: time.Minute})
	ctx := context.Background()
	if _, err := s.WriteFile(ctx, "s", "a", strings.NewReader("1")); err != nil {
		t.Fatal(err)
	}
	c.Advance(2 * time.Minute)
	var ee *ExpiredError
	if _, err := s.OpenFile(ctx, "s", "a"); !errors.As(err, &ee) {
		t.Fatalf("OpenFile of an expired session = %v", err)
	}
	if _, err := s.ListFiles(ctx, "s"); !errors.As(err, &ee) {
		t.Fatalf("ListFiles of an expired session = %v", err)
	}
	if _, err := s.WriteFile(ctx, "s", "a", strings.NewReader("1")); !errors.As(err, &ee) {
		t.Fatalf("WriteFile of an expired session = %v", err)
	}
	if _, err := s.WriteFile(ctx, "s", "a", strings.NewReader("1")); err != nil {
		t.Fatalf("the next write starts it anew: %v", err)
	}
}

// The session caps hold: the file cap, the session's disk (ENOSPC from its
// tmpfs) and the number of sessions.
func TestFilesCaps(t *testing.T) {
	testutil.RequireRoot(t)
	small, _ := open(t, Options{NoTmpfs: true, MaxBytes: 1 << 20, MaxFileBytes: 4 << 20})
	if got := small.MaxFileBytes(); got != 1<<20 {
		t.Fatalf("MaxFileBytes = %d, want the session's cap", got)
	}
	s, _ := open(t, Options{MaxBytes: 2 << 20, MaxFileBytes: 1 << 20, MaxSessions: 1})
	ctx := context.Background()
	if _, err := s.WriteFile(ctx, "s", "big", bytes.NewReader(make([]byte, 1536<<10))); !errors.Is(err, wsfile.ErrTooLarge) {
		t.Fatalf("over the file cap: %v", err)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := s.WriteFile(ctx, "s", name, bytes.NewReader(make([]byte, 900<<10))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.WriteFile(ctx, "s", "c", bytes.NewReader(make([]byte, 900<<10))); !errors.Is(err, wsfile.ErrNoSpace) {
		t.Fatalf("over the session's disk: %v", err)
	}
	// A full session is still read, listed and emptied.
	if list, err := s.ListFiles(ctx, "s"); err != nil || len(list) != 2 {
		t.Fatalf("ListFiles = %+v, %v", list, err)
	}
	for _, name := range []string{"a", "b"} {
		if err := s.DeleteFile(ctx, "s", name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.WriteFile(ctx, "t", "a", strings.NewReader("x")); !errors.Is(err, ErrTooManySessions) {
		t.Fatalf("a second session: %v", err)
	}
	// Nothing of the refused writes stays.
	l, err := s.Acquire(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	ents, err := os.ReadDir(l.Dir())
	if err != nil || len(ents) != 0 {
		t.Fatalf("left in the workspace: %v, %v", ents, err)
	}
}

// TestKeptSessionFiles: the files of a workspace the keeper holds (as
// without root, here as root too) are reached through its path as any
// other's, the keeper's tmpfs answering a full workspace.
func TestKeptSessionFiles(t *testing.T) {
	s, _ := open(t, Options{MaxBytes: 1 << 20})
	s.inKeeper = true
	ctx := context.Background()
	if _, err := s.WriteFile(ctx, "k", "d/a.txt", strings.NewReader("kept")); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, s, ctx, "k", "d/a.txt"); got != "kept" {
		t.Fatalf("read %q", got)
	}
	if list, err := s.ListFiles(ctx, "k"); err != nil || len(list) != 1 || list[0].Path != "d/a.txt" {
		t.Fatalf("ListFiles = %+v, %v", list, err)
	}
	if _, err := s.WriteFile(ctx, "k", "big", bytes.NewReader(make([]byte, 900<<10))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteFile(ctx, "k", "big2", bytes.NewReader(make([]byte, 900<<10))); !errors.Is(err, wsfile.ErrNoSpace) {
		t.Fatalf("past the kept tmpfs's cap: %v", err)
	}
	if err := s.DeleteFile(ctx, "k", "big"); err != nil {
		t.Fatal(err)
	}
}
