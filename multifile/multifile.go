package multifile

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/coderunner/coderunner/sandbox"
)

// Bounds on the files of one request. They keep what the host decodes,
// holds and writes for one request small next to the workspace it is
// written into.
const (
	// MaxFiles is the number of files a request may carry.
	MaxFiles = 256
	// MaxTotalBytes bounds the files' contents together, once decoded.
	MaxTotalBytes = 16 << 20
	// MaxPathBytes bounds the length of one file's path.
	MaxPathBytes = 512
	// MaxNameBytes bounds one element of a path, as the kernel does.
	MaxNameBytes = 255
	// MaxDepth bounds how many directories deep a file may be.
	MaxDepth = 16
)

// Encodings of File.Content.
const (
	EncodingUTF8   = "utf8"
	EncodingBase64 = "base64"
)

// ErrInvalid is wrapped by every refusal of Decode and Resolve: the
// request is at fault, never the machinery.
var ErrInvalid = errors.New("invalid files")

// File is one file of a request, as JSON carries it.
type File struct {
	// Path is relative to /workspace, with forward slashes: no "..", not
	// absolute, not "." nor empty.
	Path string `json:"path"`
	// Content is the file's content, as text or in base64 (Encoding).
	Content string `json:"content"`
	// Encoding is "utf8" (the default when empty) or "base64".
	Encoding string `json:"encoding,omitempty"`
	// Executable makes the file executable (mode 0755 instead of 0644).
	Executable bool `json:"executable,omitempty"`
}

// Error is a refused request field: Field names it as the request spells
// it ("files[3].path", "entry").
type Error struct {
	Field  string
	Reason string
}

func (e *Error) Error() string { return e.Field + ": " + e.Reason }

// Unwrap makes every Error match ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

func errorf(field, format string, args ...any) *Error {
	return &Error{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Field is the request's name of a field of its i-th file: "files[i].path".
func Field(i int, name string) string { return fmt.Sprintf("files[%d].%s", i, name) }

// Decode checks a request's files and returns them as the sandbox writes
// them, in the same order (so that files[i] is still the i-th). An error
// is an *Error naming the first field at fault.
func Decode(files []File) ([]sandbox.File, error) {
	if len(files) == 0 {
		return nil, nil
	}
	if len(files) > MaxFiles {
		return nil, errorf("files", "%d files, at most %d", len(files), MaxFiles)
	}
	out := make([]sandbox.File, 0, len(files))
	seen := make(map[string]int, len(files))
	total := 0
	for i, f := range files {
		if err := CheckPath(f.Path); err != nil {
			return nil, errorf(Field(i, "path"), "%s", err)
		}
		if j, ok := seen[f.Path]; ok {
			return nil, errorf(Field(i, "path"), "%q is given twice (files[%d])", f.Path, j)
		}
		seen[f.Path] = i
		content, err := decodeContent(f)
		if err != nil {
			return nil, errorf(Field(i, err.field), "%s", err.reason)
		}
		total += len(content)
		if total > MaxTotalBytes {
			return nil, errorf(Field(i, "content"), "the files hold more than %d bytes once decoded", MaxTotalBytes)
		}
		mode := fs.FileMode(0o644)
		if f.Executable {
			mode = 0o755
		}
		out = append(out, sandbox.File{Path: f.Path, Content: content, Mode: mode})
	}
	// A file cannot also be a directory of another.
	for i, f := range files {
		for dir := parent(f.Path); dir != ""; dir = parent(dir) {
			if j, ok := seen[dir]; ok {
				return nil, errorf(Field(i, "path"), "%q is beneath %q, which files[%d] makes a file", f.Path, dir, j)
			}
		}
	}
	return out, nil
}

// parent is the directory of a relative path, or "" at the top.
func parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	return p[:i]
}

type contentError struct{ field, reason string }

func decodeContent(f File) ([]byte, *contentError) {
	switch strings.ToLower(f.Encoding) {
	case "", EncodingUTF8, "utf-8":
		if !utf8.ValidString(f.Content) {
			return nil, &contentError{"content", "not valid UTF-8; send binary content with \"encoding\": \"base64\""}
		}
		return []byte(f.Content), nil
	case EncodingBase64:
		if base64.StdEncoding.DecodedLen(len(f.Content)) > MaxTotalBytes+3 {
			return nil, &contentError{"content", fmt.Sprintf("more than %d bytes once decoded", MaxTotalBytes)}
		}
		b, err := base64.StdEncoding.Strict().DecodeString(f.Content)
		if err != nil {
			return nil, &contentError{"content", "not valid base64: " + err.Error()}
		}
		return b, nil
	}
	return nil, &contentError{"encoding", fmt.Sprintf("%q is not \"utf8\" or \"base64\"", f.Encoding)}
}

// CheckPath accepts a file's path: relative, clean, within the bounds,
// staying beneath the workspace, free of control characters and
// backslashes (which other systems take for separators).
func CheckPath(p string) error {
	if err := sandbox.ValidRelativePath(p); err != nil {
		return err
	}
	if len(p) > MaxPathBytes {
		return fmt.Errorf("path of %d bytes, at most %d", len(p), MaxPathBytes)
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("%q is not valid UTF-8", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return fmt.Errorf("%q holds a control character or a backslash", p)
		}
	}
	parts := strings.Split(p, "/")
	if len(parts) > MaxDepth {
		return fmt.Errorf("%q is more than %d levels deep", p, MaxDepth)
	}
	for _, part := range parts {
		if len(part) > MaxNameBytes {
			return fmt.Errorf("a name of %d bytes, at most %d", len(part), MaxNameBytes)
		}
	}
	return nil
}

// Source is a program as the build takes it: the request's code (written
// under the language's file name), its files, and the entry.
type Source struct {
	// Code is the request's code; it may be empty when Files and Entry
	// hold the program.
	Code string
	// Files are the request's files, decoded (see Decode).
	Files []sandbox.File
	// Entry is the file to run or compile, relative to the workspace;
	// empty means the code's file.
	Entry string
}

// HasFiles reports whether the program is more than its code.
func (s Source) HasFiles() bool { return len(s.Files) > 0 || s.Entry != "" }

// Size is the number of bytes of code and files together.
func (s Source) Size() int {
	n := len(s.Code)
	for _, f := range s.Files {
		n += len(f.Content)
	}
	return n
}

// Layout is a Source placed in the workspace.
type Layout struct {
	// Files are every file written before the build: the code's first
	// (when there is code), then the request's.
	Files []sandbox.File
	// Entry is the entry's path relative to the workspace.
	Entry string
	// EntryContent is the entry file's content.
	EntryContent []byte
}

// Resolve places src in the workspace: the code (when not blank) under
// generated, then the files. reserved maps the paths the build writes
// itself (the compiled program) to why; no file may stand at one of
// them or beneath it. An error is an *Error naming the field at fault.
func Resolve(src Source, generated string, reserved map[string]string) (*Layout, error) {
	code := strings.TrimSpace(src.Code) != ""
	out := &Layout{}
	taken := map[string]string{}
	for p, why := range reserved {
		taken[p] = why
	}
	if code {
		out.Files = append(out.Files, sandbox.File{Path: generated, Content: []byte(src.Code), Mode: 0o644})
		taken[generated] = "where code is written"
	}
	for i, f := range src.Files {
		for p := f.Path; p != ""; p = parent(p) {
			if why, ok := taken[p]; ok {
				return nil, errorf(Field(i, "path"), "%q is %s", p, why)
			}
		}
		// A reserved path may also not be beneath the file.
		for p, why := range taken {
			if strings.HasPrefix(p, f.Path+"/") {
				return nil, errorf(Field(i, "path"), "%q would stand over %q, %s", f.Path, p, why)
			}
		}
		out.Files = append(out.Files, f)
	}
	entry := src.Entry
	switch {
	case entry == "" && !code:
		return nil, errorf("entry", "required when code is empty: name the file of files to run")
	case entry == "":
		entry = generated
	default:
		if err := CheckPath(entry); err != nil {
			return nil, errorf("entry", "%s", err)
		}
	}
	for _, f := range out.Files {
		if f.Path == entry {
			out.Entry, out.EntryContent = entry, f.Content
			return out, nil
		}
	}
	if code {
		return nil, errorf("entry", "%q is neither among files nor %q, where code is written", entry, generated)
	}
	return nil, errorf("entry", "%q is not among files", entry)
}
