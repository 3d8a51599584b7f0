// Package hostws prepares a host directory that a sandbox mounts as its
// writable workspace: it hands the directory to the sandbox's user and
// writes the spec's files into it without ever following a path the
// sandbox controls.
//
// The directory may hold files an earlier run of a session left, links
// included, so every name in it is resolved with
// openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV)
// and replaced rather than written through (the Judge0 escapes,
// CVE-2024-28185 and CVE-2024-28189, were a host following such a link).
package hostws
