// Package multifile is a program of several files: the "files" and
// "entry" fields of a request, as every front end (the Go API, the command
// line, /v1/run, /v1/judge, the MCP tools) takes them.
//
// A request's files are hostile input. Decode refuses, naming the field
// and index ("files[3].path: ..."), a path that is absolute, not clean,
// leaves the workspace (".."), holds a control character, is too long or
// too deep, is given twice, or stands beneath another file; content that
// is not valid base64 when it says so; and more files or more decoded
// bytes than MaxFiles and MaxTotalBytes. What Decode accepts is written
// beneath /workspace by the sandbox backends, which open every path with
// openat2 (RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS) and never follow a link
// an earlier run of a session left there.
package multifile
