package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/wsfile"
)

// Defaults and bounds of the file operations.
const (
	// DefaultMaxFileBytes is the default of Options.MaxFileBytes.
	DefaultMaxFileBytes = 16 << 20
	// MaxListEntries bounds the names a listing visits (ListFiles), so
	// that a workspace of many small files cannot make one request
	// digest them all.
	MaxListEntries = 10_000
)

// File is one regular file of a session's workspace, as ListFiles
// describes it.
type File = wsfile.Entry

// MaxFileBytes is the largest file WriteFile takes: Options.MaxFileBytes,
// never more than a session's disk cap.
func (s *Store) MaxFileBytes() int64 { return min(s.opts.MaxFileBytes, s.opts.MaxBytes) }

// WriteFile makes path, relative to the workspace of the session id of
// ctx's owner, a regular file holding what r gives (at most MaxFileBytes,
// read as it comes, never held whole), and returns its size. It starts
// the session when it is new, within the caps a call meets, and waits
// for the session's running call as a call does. Missing directories are
// made; whatever stood at path but a directory is replaced, a link
// included, never written through. What it writes belongs to the user
// the sandbox runs the session's programs as, so that the next run may
// change it. It returns the file as a listing shows it.
//
// Errors: the path's rules (wsfile.ErrInvalidPath), wsfile.ErrIsDir,
// wsfile.ErrLink (a directory on the way is a link or a file),
// wsfile.ErrTooLarge, wsfile.ErrNoSpace (the session's disk cap), and
// those of Acquire.
func (s *Store) WriteFile(ctx context.Context, id, path string, r io.Reader) (File, error) {
	if err := wsfile.CheckPath(path); err != nil {
		return File{}, err
	}
	l, err := s.fileLease(ctx, id, true)
	if err != nil {
		return File{}, err
	}
	defer l.Release()
	root, err := wsfile.Open(l.Dir())
	if err != nil {
		return File{}, err
	}
	defer root.Close()
	h := sha256.New()
	n, err := root.Write(path, io.TeeReader(r, h), s.MaxFileBytes())
	if err != nil {
		return File{}, err
	}
	return File{Path: path, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// FileReader is an open file of a session. The session's next call waits
// until it is closed.
type FileReader struct {
	*os.File
	// Size is the file's length in bytes when it was opened.
	Size  int64
	lease *Lease
	once  sync.Once
}

// Close closes the file and lets the session's next call run. It is safe
// to call more than once.
func (f *FileReader) Close() error {
	var err error
	f.once.Do(func() {
		err = f.File.Close()
		f.lease.Release()
	})
	return err
}

// OpenFile opens the regular file path of the session id of ctx's owner
// for reading. It waits for the session's running call, and the next call
// waits until the file is closed. It fails with wsfile.ErrNotFound,
// wsfile.ErrNotRegular for anything else at path (a link is never
// followed, a FIFO never read), wsfile.ErrIsDir, wsfile.ErrLink, and
// ErrNotFound or an *ExpiredError for a session that does not exist; it
// never starts one.
func (s *Store) OpenFile(ctx context.Context, id, path string) (*FileReader, error) {
	if err := wsfile.CheckPath(path); err != nil {
		return nil, err
	}
	l, err := s.fileLease(ctx, id, false)
	if err != nil {
		return nil, err
	}
	root, err := wsfile.Open(l.Dir())
	if err != nil {
		l.Release()
		return nil, err
	}
	defer root.Close()
	f, size, err := root.OpenFile(path)
	if err != nil {
		l.Release()
		return nil, err
	}
	return &FileReader{File: f, Size: size, lease: l}, nil
}

// DeleteFile removes path from the session id of ctx's owner: a file, a
// link (never followed) or another special file; a directory is refused
// (wsfile.ErrIsDir). It fails as OpenFile does otherwise.
func (s *Store) DeleteFile(ctx context.Context, id, path string) error {
	if err := wsfile.CheckPath(path); err != nil {
		return err
	}
	l, err := s.fileLease(ctx, id, false)
	if err != nil {
		return err
	}
	defer l.Release()
	root, err := wsfile.Open(l.Dir())
	if err != nil {
		return err
	}
	defer root.Close()
	return root.Remove(path)
}

// ListFiles lists the regular files of the session id of ctx's owner,
// sorted by path, with their sizes and SHA-256 digests (wsfile.Root.List:
// links and special files are neither followed nor listed). A workspace
// of more than MaxListEntries names is refused with wsfile.ErrTooMany.
func (s *Store) ListFiles(ctx context.Context, id string) ([]File, error) {
	l, err := s.fileLease(ctx, id, false)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	root, err := wsfile.Open(l.Dir())
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.List(MaxListEntries, s.opts.MaxBytes)
}

// fileLease is Acquire for a file operation: create starts the session
// when it is new (a write), as a call does; otherwise a session that does
// not exist is ErrNotFound (or an *ExpiredError, which stays remembered
// for the next call). Only a write meets the disk caps: a full session
// can still be read, listed and emptied.
func (s *Store) fileLease(ctx context.Context, id string, create bool) (*Lease, error) {
	if err := execute.ValidateSessionID(id); err != nil {
		return nil, err
	}
	var e *entry
	var err error
	if create {
		e, err = s.enter(ctx, id, 0)
	} else {
		e, err = s.find(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	l, err := s.wait(ctx, e)
	if err != nil {
		return nil, err
	}
	if create {
		err = s.admit(e)
	} else {
		s.mu.Lock()
		if e.ended {
			err = fmt.Errorf("%w: session %q ended while the call waited", ErrNotFound, e.id)
		}
		s.mu.Unlock()
	}
	if err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}

// find is enter for a session that must exist already.
func (s *Store) find(ctx context.Context, id string) (*entry, error) {
	k := key(ctx, id)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	now := s.opts.now()
	e := s.sessions[k]
	var gone *entry
	if e != nil && s.dueLocked(e, now) {
		if s.expireLocked(e, now) {
			gone = e
		}
		e = nil
	}
	var err error
	if e == nil {
		if at, ok := s.expiredLocked(k, now); ok {
			err = &ExpiredError{ID: id, At: at}
		} else {
			err = fmt.Errorf("%w: %q", ErrNotFound, id)
		}
	} else {
		e.busy++
		e.lastUsed = now
	}
	s.mu.Unlock()
	if gone != nil {
		s.destroy(gone)
	}
	return e, err
}
