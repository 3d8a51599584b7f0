// Package session keeps the workspaces of sessions: a call that
// names a session_id runs in that session's workspace, so a file written by
// one call is there for the next; everything else (processes, /tmp,
// memory) is fresh for every call, since each call is a new sandbox.
//
// A Store owns the workspaces. Calls in one session run one at a time (a
// second call waits for the first, or for its context); different sessions
// never share a directory. A session starts with its first call and ends
// when it is deleted, when it has been idle for Options.IdleTimeout, or
// when the Store is closed; its files are removed then.
//
// The workspace is written by untrusted code, so the host treats it as
// hostile:
//
//   - As root, each workspace is a tmpfs of Options.MaxBytes and
//     Options.MaxFiles inodes mounted on the session's directory: the
//     kernel enforces the cap while the program writes, and ending the
//     session is one lazy unmount. Without root the same tmpfs is mounted
//     by the workspace keeper in a user and mount namespace of its own
//     (capws.MountKept), reached through it, and unmounted there when the
//     session ends; the native backend attaches it.
//   - Otherwise the cap is checked before each call by a bounded walk that
//     never follows links (openat with O_NOFOLLOW, fstatat with
//     AT_SYMLINK_NOFOLLOW, a limit on entries and depth); a session over
//     its cap refuses new calls with ErrSessionFull until it is deleted.
//   - Files are removed by a walk of directory descriptors that unlinks
//     names and never follows a link, and moves trees nested too deep up
//     before descending further, so that neither a link nor a deep tree
//     can make the host touch anything outside the workspace.
//   - Session ids match ^[A-Za-z0-9_-]{1,64}$, so an id can never name a
//     path outside the Store's directory.
//
// Each Store works in its own instance directory, locked with flock(2),
// under Options.Dir. Opening a Store removes the instance directories that
// no live process holds (what a crashed process left, tmpfs mounts
// included), so that two processes sharing Options.Dir (a server and an
// MCP server over stdio) never remove each other's sessions.
//
// Store.Execute (and the Executor that Store.Wrap returns) is how callers
// use it: a request with a SessionID runs in that session's workspace,
// one without runs as before.
package session
