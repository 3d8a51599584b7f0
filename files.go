package coderunner

import (
	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/multifile"
)

// File is one more file of a program, written beneath /workspace before
// it is compiled or run: its Path relative to /workspace (no "..", not
// absolute), its Content as text or, with Encoding "base64", in base64,
// and whether it is Executable. The bounds are multifile's MaxFiles,
// MaxTotalBytes and MaxPathBytes.
type File = multifile.File

// ArtifactOptions ask for the contents of the files a program leaves.
type ArtifactOptions = execute.ArtifactOptions

// WithFiles adds files to the program: with code, they are written beside
// its file (main.<ext>); a compiled language compiles every source among
// them (C and C++ all .c/.cpp files, Java all .java files, Go the .go
// files at the top or the module of a go.mod, Rust the entry's modules).
// A refused file is an error naming it ("files[2].path: ...").
func WithFiles(files ...File) Option {
	return func(c *call) { c.files = append(c.files, files...) }
}

// WithEntry names the file to run or compile, a path among WithFiles' (or
// code's own file). With an entry the code may be empty.
func WithEntry(path string) Option { return func(c *call) { c.entry = path } }

// WithArtifactContent returns, in Result.Artifacts, the contents (base64)
// of the files the program leaves in /workspace, up to maxBytes together
// (0: execute.DefaultArtifactContentBytes; at most
// execute.MaxArtifactContentBytes).
func WithArtifactContent(maxBytes int64) Option {
	return func(c *call) { c.artifacts = ArtifactOptions{IncludeContent: true, MaxBytes: maxBytes} }
}
