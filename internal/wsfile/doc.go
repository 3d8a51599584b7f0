// Package wsfile reads, writes, removes and lists the files of a
// workspace on the host, a directory that sandboxed programs wrote and
// whose every name is hostile: a program may leave links to host files,
// links to directories, FIFOs, deep trees or a file where a directory is
// expected.
//
// Every name is resolved relative to a descriptor of the workspace with
// openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV):
// no link is ever followed, nothing outside the workspace is reached, and
// no mount inside it is crossed (the Judge0 escapes, CVE-2024-28185 and
// CVE-2024-28189, were a host following such a link). A file is written
// to a new name and renamed over the old one, so a link or a hard link at
// the name is replaced, never written through; it is read only when it is
// a regular file, opened without blocking, so a FIFO cannot hold the host.
//
// Paths follow CheckPath: relative, clean, no "..", no NUL or control
// character, at most MaxPathBytes long and MaxDepth deep.
package wsfile
