package wsfile

import "errors"

// Error classes. Callers test them with errors.Is; the wrapping errors
// name the path.
var (
	// ErrInvalidPath: the path breaks a rule of CheckPath.
	ErrInvalidPath = errors.New("invalid path")
	// ErrNotFound: nothing stands at the path, or a directory on the way
	// is missing.
	ErrNotFound = errors.New("no such file")
	// ErrNotRegular: something other than a regular file stands at the
	// path (a directory, a link, a FIFO, a socket); it is neither read
	// nor followed.
	ErrNotRegular = errors.New("not a regular file")
	// ErrIsDir: a directory stands where a file is to be written or
	// removed.
	ErrIsDir = errors.New("a directory stands at the path")
	// ErrLink: a directory on the way is a link or not a directory, or
	// is another mount; it is never followed.
	ErrLink = errors.New("a directory on the way is a link or not a directory")
	// ErrTooLarge: the content is longer than the cap the caller gave.
	ErrTooLarge = errors.New("file too large")
	// ErrNoSpace: the workspace's filesystem is full (its size or its
	// number of files).
	ErrNoSpace = errors.New("no space left in the workspace")
	// ErrTooMany: a listing found more entries or depth than it visits.
	ErrTooMany = errors.New("the workspace holds too many files to list")
)
