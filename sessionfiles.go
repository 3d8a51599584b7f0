package coderunner

import (
	"context"
	"io"

	"github.com/coderunner/coderunner/internal/wsfile"
	"github.com/coderunner/coderunner/session"
)

// SessionFile describes a regular file of a session's workspace: its
// path relative to /workspace, its size and the hex SHA-256 of its
// content.
type SessionFile = session.File

// SessionFileReader is an open file of a session: read it, then Close it.
// Its Size is the file's length when it was opened. The session's next
// call waits until it is closed.
type SessionFileReader = session.FileReader

// Error classes of the session file operations. Callers test them with
// errors.Is; the messages name the path.
var (
	// ErrInvalidPath: the path is not relative, not clean, holds "..",
	// a NUL or control character or a backslash, or is over 512 bytes
	// or 16 levels deep.
	ErrInvalidPath = wsfile.ErrInvalidPath
	// ErrFileNotFound: nothing stands at the path.
	ErrFileNotFound = wsfile.ErrNotFound
	// ErrNotRegularFile: a symbolic link (never followed), a FIFO (never
	// read) or another special file stands at the path.
	ErrNotRegularFile = wsfile.ErrNotRegular
	// ErrIsDirectory: a directory stands at the path.
	ErrIsDirectory = wsfile.ErrIsDir
	// ErrPathThroughLink: a directory on the way is a symbolic link or a
	// file; no link is followed.
	ErrPathThroughLink = wsfile.ErrLink
	// ErrFileTooLarge: the content is over sessions.max_file_mb.
	ErrFileTooLarge = wsfile.ErrTooLarge
	// ErrNoSpace: the session's workspace is full; nothing of the write
	// stays.
	ErrNoSpace = wsfile.ErrNoSpace
	// ErrTooManyFiles: the workspace holds more names than a listing
	// visits (10000).
	ErrTooManyFiles = wsfile.ErrTooMany
)

// WriteSessionFile makes path, relative to the session's /workspace, a
// file holding what r gives (at most sessions.max_file_mb, read as it
// comes), for the session's next call to use. The session starts if it
// is new; a call running in it finishes first (or ctx ends the wait).
// Missing directories are made; a file or link at path is replaced,
// never written through. The program of the next call may change the
// file as it can change what earlier calls wrote.
func (c *CodeRunner) WriteSessionFile(ctx context.Context, id, path string, r io.Reader) (SessionFile, error) {
	if c.parts.Sessions == nil {
		return SessionFile{}, session.ErrDisabled
	}
	return c.parts.Sessions.WriteFile(ctx, id, path, r)
}

// OpenSessionFile opens the regular file path of the session for
// reading; close it when done. A symbolic link is never followed and a
// FIFO never read (ErrNotRegularFile). It never starts a session
// (ErrSessionNotFound).
func (c *CodeRunner) OpenSessionFile(ctx context.Context, id, path string) (*SessionFileReader, error) {
	if c.parts.Sessions == nil {
		return nil, session.ErrDisabled
	}
	return c.parts.Sessions.OpenFile(ctx, id, path)
}

// DeleteSessionFile removes path from the session: a file, or a link
// (never followed); a directory is refused (ErrIsDirectory).
func (c *CodeRunner) DeleteSessionFile(ctx context.Context, id, path string) error {
	if c.parts.Sessions == nil {
		return session.ErrDisabled
	}
	return c.parts.Sessions.DeleteFile(ctx, id, path)
}

// SessionFiles lists the regular files of the session, sorted by path,
// with their sizes and SHA-256 digests; links and special files are
// neither followed nor listed.
func (c *CodeRunner) SessionFiles(ctx context.Context, id string) ([]SessionFile, error) {
	if c.parts.Sessions == nil {
		return nil, session.ErrDisabled
	}
	return c.parts.Sessions.ListFiles(ctx, id)
}
