package wsfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/internal/testutil"
)

func open(t *testing.T, dir string) *Root {
	t.Helper()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestCheckPath(t *testing.T) {
	for _, p := range []string{"a", "a/b.txt", "dir/sub/file", "ünï.txt", "a..b"} {
		if err := CheckPath(p); err != nil {
			t.Errorf("CheckPath(%q) = %v", p, err)
		}
	}
	bad := []string{"", ".", "..", "../x", "a/../../x", "/etc/passwd", "a//b", "a/./b", "a/", "nul\x00", "a\nb",
		"back\\slash", "\xff", strings.Repeat("a/", MaxDepth) + "x", strings.Repeat("x", MaxNameBytes+1),
		strings.Repeat("abcdefg/", 70)}
	for _, p := range bad {
		if err := CheckPath(p); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("CheckPath(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
}

func TestWriteReadListRemove(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	content := []byte("binary\x00\xff\xfe data\n")
	n, err := r.Write("sub/dir/data.bin", bytes.NewReader(content), 1<<20)
	if err != nil || n != int64(len(content)) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	f, size, err := r.OpenFile("sub/dir/data.bin")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 64)
	k, _ := f.Read(got)
	f.Close()
	if size != int64(len(content)) || !bytes.Equal(got[:k], content) {
		t.Fatalf("read %q (size %d), want %q", got[:k], size, content)
	}
	if _, err := r.Write("top.txt", strings.NewReader("hi"), 10); err != nil {
		t.Fatal(err)
	}
	list, err := r.List(100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	want := []Entry{{"sub/dir/data.bin", int64(len(content)), hex.EncodeToString(sum[:])}, {"top.txt", 2, "8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"}}
	if len(list) != 2 || list[0] != want[0] || list[1] != want[1] {
		t.Fatalf("List = %+v, want %+v", list, want)
	}
	if err := r.Remove("top.txt"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.OpenFile("top.txt"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after Remove: %v", err)
	}
	if err := r.Remove("top.txt"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Remove twice: %v", err)
	}
	if err := r.Remove("sub"); !errors.Is(err, ErrIsDir) {
		t.Fatalf("Remove of a directory: %v", err)
	}
	if _, _, err := r.OpenFile("sub"); !errors.Is(err, ErrIsDir) {
		t.Fatalf("OpenFile of a directory: %v", err)
	}
	if _, err := r.Write("sub", strings.NewReader("x"), 10); !errors.Is(err, ErrIsDir) {
		t.Fatalf("Write over a directory: %v", err)
	}
	if _, err := r.Write("sub/dir/data.bin/x", strings.NewReader("x"), 10); !errors.Is(err, ErrLink) {
		t.Fatalf("Write beneath a file: %v", err)
	}
}

// A replaced file keeps its mode, and what was written under a temporary
// name never stays.
func TestWriteKeepsModeAndLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("old"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Write("run.sh", strings.NewReader("new"), 10); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "run.sh"))
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v, %v", st.Mode(), err)
	}
	if _, err := r.Write("run.sh", strings.NewReader("far too long"), 5); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the cap: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "run.sh"))
	if string(b) != "new" {
		t.Fatalf("a refused write changed the file: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
}

// Links a program planted are never followed: not to read, not to write,
// not on the way to a file, not by a listing.
func TestLinksAreNeverFollowed(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := open(t, dir)
	must(t, os.Symlink(secret, filepath.Join(dir, "passwd")))
	must(t, os.Symlink("/etc/passwd", filepath.Join(dir, "etcpasswd")))
	must(t, os.Symlink(outside, filepath.Join(dir, "out")))
	must(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	must(t, os.Symlink("..", filepath.Join(dir, "d", "up")))

	for _, p := range []string{"passwd", "etcpasswd"} {
		if _, _, err := r.OpenFile(p); !errors.Is(err, ErrNotRegular) {
			t.Errorf("OpenFile(%s) = %v, want ErrNotRegular", p, err)
		}
	}
	for _, p := range []string{"out/secret", "d/up/passwd"} {
		if _, _, err := r.OpenFile(p); !errors.Is(err, ErrLink) {
			t.Errorf("OpenFile(%s) = %v, want ErrLink", p, err)
		}
		if _, err := r.Write(p, strings.NewReader("pwned"), 10); !errors.Is(err, ErrLink) {
			t.Errorf("Write(%s) = %v, want ErrLink", p, err)
		}
		if err := r.Remove(p); !errors.Is(err, ErrLink) {
			t.Errorf("Remove(%s) = %v, want ErrLink", p, err)
		}
	}
	// Writing at a link replaces the link.
	if _, err := r.Write("passwd", strings.NewReader("mine"), 10); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "host secret" {
		t.Fatalf("the host file was written through a link: %q", b)
	}
	if st, err := os.Lstat(filepath.Join(dir, "passwd")); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("the link was not replaced: %v %v", st, err)
	}
	// Removing a link removes the link only.
	if err := r.Remove("etcpasswd"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Fatal(err)
	}
	list, err := r.List(100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Path != "passwd" {
		t.Fatalf("List = %+v, want only the regular file", list)
	}
	// A hard link to a file is replaced by a write too, not written
	// through.
	must(t, os.WriteFile(filepath.Join(dir, "a"), []byte("A"), 0o644))
	must(t, os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "b")))
	if _, err := r.Write("b", strings.NewReader("B"), 10); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a")); string(got) != "A" {
		t.Fatalf("written through a hard link: %q", got)
	}
}

// A FIFO is refused at once, never opened for a blocking read.
func TestFIFODoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	must(t, unix.Mkfifo(filepath.Join(dir, "pipe"), 0o644))
	done := make(chan error, 1)
	go func() {
		_, _, err := r.OpenFile("pipe")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Fatalf("OpenFile(FIFO) = %v, want ErrNotRegular", err)
		}
	case <-time.After(30 * time.Second):
		// Not a timing assertion: a blocked open never returns.
		t.Fatal("OpenFile blocked on a FIFO")
	}
	list, err := r.List(10, 1<<20)
	if err != nil || len(list) != 0 {
		t.Fatalf("List = %+v, %v", list, err)
	}
}

func TestListBounds(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	for i := range 5 {
		must(t, os.WriteFile(filepath.Join(dir, string(rune('a'+i))), []byte("12345"), 0o644))
	}
	if _, err := r.List(4, 1<<20); !errors.Is(err, ErrTooMany) {
		t.Fatalf("over the entries: %v", err)
	}
	if _, err := r.List(10, 20); !errors.Is(err, ErrTooMany) {
		t.Fatalf("over the bytes: %v", err)
	}
	// Deeper than any path may name: not listed.
	deep := dir
	for range MaxDepth {
		deep = filepath.Join(deep, "z")
	}
	must(t, os.MkdirAll(deep, 0o755))
	must(t, os.WriteFile(filepath.Join(deep, "f"), nil, 0o644))
	list, err := r.List(100, 1<<20)
	if err != nil || len(list) != 5 {
		t.Fatalf("List = %d entries, %v", len(list), err)
	}
}

// A full workspace answers ErrNoSpace, and keeps nothing of the write.
func TestNoSpace(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	if err := capws.Mount(dir, 64<<10, 64); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	r := open(t, dir)
	if _, err := r.Write("big", bytes.NewReader(make([]byte, 1<<20)), 2<<20); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Write = %v, want ErrNoSpace", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

// As root, what is written into a workspace handed to a sandbox user is
// that user's.
func TestOwner(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	must(t, os.Chown(dir, 4242, 4243))
	r := open(t, dir)
	if _, err := r.Write("x/y", strings.NewReader("z"), 10); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"x", "x/y"} {
		var st unix.Stat_t
		must(t, unix.Lstat(filepath.Join(dir, p), &st))
		if st.Uid != 4242 || st.Gid != 4243 {
			t.Errorf("%s owned by %d:%d", p, st.Uid, st.Gid)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
