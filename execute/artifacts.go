package execute

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"strings"
)

// MaxArtifacts bounds the artifacts listed for one run, so that a program
// that creates a million files cannot make the result enormous.
const MaxArtifacts = 1000

// ArtifactLimits bound one scan of a workspace. The workspace is written by
// untrusted code, so every dimension of the work the host does for it is
// capped.
type ArtifactLimits struct {
	// MaxFiles is the number of artifacts listed; the rest are left out.
	MaxFiles int
	// MaxHashBytes is how many bytes of content are read, in total, to
	// sniff types and compute checksums. Files past it are listed with
	// their size and a type from their extension, without a checksum.
	MaxHashBytes int64
	// MaxEntries is how many directory entries are looked at, in total,
	// hidden and skipped ones included, so that a directory of a million
	// empty files cannot stall the scan.
	MaxEntries int
	// MaxDepth is how deep below the workspace directories are entered.
	MaxDepth int
	// ContentBytes, when positive, returns the contents of the files
	// (Artifact.Content), in path order, as long as their sizes together
	// stay within it: a file that does not fit in what is left is listed
	// without its content. Zero returns no content.
	ContentBytes int64
}

// Bounds on the contents of artifacts a result returns.
const (
	// DefaultArtifactContentBytes is what a request asking for contents
	// without max_bytes gets.
	DefaultArtifactContentBytes = 1 << 20
	// MaxArtifactContentBytes is the most content one result returns,
	// whatever the request asks: the service's own cap.
	MaxArtifactContentBytes = 8 << 20
)

// ArtifactOptions ask for the contents of the artifacts with the result
// ("artifacts" of a /v1/run body).
type ArtifactOptions struct {
	// IncludeContent returns the artifacts' contents in base64.
	IncludeContent bool `json:"include_content"`
	// MaxBytes bounds the contents returned, together, in bytes before
	// encoding: 1 to MaxArtifactContentBytes; zero means
	// DefaultArtifactContentBytes.
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// Validate refuses max_bytes out of range with an error wrapping
// ErrInvalidArtifacts.
func (o ArtifactOptions) Validate() error {
	if o.MaxBytes < 0 || o.MaxBytes > MaxArtifactContentBytes {
		return fmt.Errorf("%w: max_bytes must be between 1 and %d, got %d", ErrInvalidArtifacts, MaxArtifactContentBytes, o.MaxBytes)
	}
	return nil
}

// contentBytes is the content budget the options ask for.
func (o ArtifactOptions) contentBytes() int64 {
	switch {
	case !o.IncludeContent:
		return 0
	case o.MaxBytes == 0:
		return DefaultArtifactContentBytes
	}
	return min(o.MaxBytes, MaxArtifactContentBytes)
}

// DefaultArtifactLimits are the limits CollectArtifacts applies.
var DefaultArtifactLimits = ArtifactLimits{
	MaxFiles:     MaxArtifacts,
	MaxHashBytes: 1 << 30,
	MaxEntries:   100_000,
	MaxDepth:     64,
}

func (l ArtifactLimits) withDefaults() ArtifactLimits {
	d := DefaultArtifactLimits
	if l.MaxFiles <= 0 {
		l.MaxFiles = d.MaxFiles
	}
	if l.MaxHashBytes <= 0 {
		l.MaxHashBytes = d.MaxHashBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = d.MaxEntries
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	return l
}

// CollectArtifacts lists the regular files under the host directory dir, a
// workspace a sandboxed program wrote to, with their size, type, time and
// SHA-256, within DefaultArtifactLimits. See CollectArtifactsWith.
func CollectArtifacts(dir string, skip func(rel string) bool) ([]Artifact, error) {
	return CollectArtifactsWith(dir, skip, DefaultArtifactLimits)
}

// CollectArtifactsWith lists the regular files under dir in lexical order
// of their paths. Hidden files and everything under hidden directories are
// left out, as are the paths for which skip returns true
// (the executor's own files). Symbolic links, FIFOs, sockets and devices
// are neither listed nor followed nor opened.
//
// The program controlled the content of dir and may still be racing the
// scan through a process that outlived it, so on Linux every open is an
// openat2 relative to an already-open directory with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS and O_NOFOLLOW: no path the program planted or
// swapped can lead the host outside dir, or into a FIFO that blocks it.
// Zero fields of lim take DefaultArtifactLimits.
func CollectArtifactsWith(dir string, skip func(rel string) bool, lim ArtifactLimits) ([]Artifact, error) {
	return collect(skip, lim, func(s *scanner) error { return s.scan(dir) })
}

// CollectArtifactsIn is CollectArtifactsWith for the directory open at
// root (a sandbox's private workspace, handed over by its backend), which
// stays open.
func CollectArtifactsIn(root *os.File, skip func(rel string) bool, lim ArtifactLimits) ([]Artifact, error) {
	return collect(skip, lim, func(s *scanner) error { return s.scanRoot(root) })
}

// collect runs a scan and returns what it found: a scan that stopped at
// one of its limits is not an error.
func collect(skip func(rel string) bool, lim ArtifactLimits, scan func(*scanner) error) ([]Artifact, error) {
	s := &scanner{lim: lim.withDefaults(), skip: skip, buf: make([]byte, 32<<10), h: sha256.New()}
	err := scan(s)
	if errors.Is(err, errScanFull) {
		err = nil
	}
	return s.out, err
}

// errScanFull stops a scan that reached one of its limits.
var errScanFull = errors.New("artifact scan limit reached")

// scanner holds the state of one scan.
type scanner struct {
	lim     ArtifactLimits
	skip    func(string) bool
	out     []Artifact
	entries int
	hashed  int64
	// content is what the files' contents returned so far hold.
	content int64
	buf     []byte
	h       hash.Hash
}

// entry counts one directory entry against MaxEntries.
func (s *scanner) entry() error {
	s.entries++
	if s.entries > s.lim.MaxEntries {
		return errScanFull
	}
	return nil
}

// wanted reports whether a regular file at rel is to be listed.
func (s *scanner) wanted(rel string) bool { return s.skip == nil || !s.skip(rel) }

// describe makes the artifact of the regular file f, open for reading at
// rel. A file that is not regular (it was swapped since the listing) is an
// error.
func (s *scanner) describe(f *os.File, rel string) (Artifact, error) {
	info, err := f.Stat()
	if err != nil {
		return Artifact{}, err
	}
	if !info.Mode().IsRegular() {
		return Artifact{}, fmt.Errorf("%s is not a regular file", rel)
	}
	a := Artifact{
		Path:      rel,
		Size:      info.Size(),
		Type:      artifactType(rel),
		CreatedAt: info.ModTime().UTC(),
	}
	if s.hashed+info.Size() > s.lim.MaxHashBytes {
		// Reading more would let the program make the host hash
		// gigabytes; the file is still listed.
		a.MimeType = mimeType(rel, nil)
		return a, nil
	}
	s.h.Reset()
	var w io.Writer = s.h
	var content *bytes.Buffer
	if s.lim.ContentBytes > 0 && s.content+info.Size() <= s.lim.ContentBytes {
		content = bytes.NewBuffer(make([]byte, 0, info.Size()))
		w = io.MultiWriter(s.h, content)
	}
	head := s.buf[:512]
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return Artifact{}, err
	}
	head = head[:n]
	_, _ = w.Write(head)
	a.MimeType = mimeType(rel, head)
	// The file may have grown since Stat: read no more than was counted.
	m, err := io.CopyBuffer(w, io.LimitReader(f, max(0, info.Size()-int64(n))), s.buf)
	if err != nil {
		return Artifact{}, err
	}
	s.hashed += int64(n) + m
	a.Checksum = "sha256:" + hex.EncodeToString(s.h.Sum(nil))
	if content != nil {
		// What was read is what was hashed: the content matches the
		// checksum even if the file changed meanwhile (a, and its size,
		// describe what was read).
		s.content += int64(content.Len())
		a.Size = int64(content.Len())
		enc := base64.StdEncoding.EncodeToString(content.Bytes())
		a.Content = &enc
	}
	return a, nil
}

// artifactType is "log" for *.log files and "artifact" for the others.
func artifactType(rel string) string {
	if path.Ext(rel) == ".log" {
		return "log"
	}
	return "artifact"
}

// knownTypes are the types of the files programs commonly write. They do
// not depend on the host's /etc/mime.types, so that every machine reports
// the same type for the same file.
var knownTypes = map[string]string{
	".csv":     "text/csv",
	".tsv":     "text/tab-separated-values",
	".txt":     "text/plain",
	".log":     "text/plain",
	".md":      "text/markdown",
	".json":    "application/json",
	".jsonl":   "application/jsonl",
	".ndjson":  "application/x-ndjson",
	".xml":     "application/xml",
	".yaml":    "application/yaml",
	".yml":     "application/yaml",
	".html":    "text/html",
	".htm":     "text/html",
	".css":     "text/css",
	".js":      "text/javascript",
	".py":      "text/x-python",
	".sh":      "application/x-sh",
	".png":     "image/png",
	".jpg":     "image/jpeg",
	".jpeg":    "image/jpeg",
	".gif":     "image/gif",
	".svg":     "image/svg+xml",
	".webp":    "image/webp",
	".bmp":     "image/bmp",
	".pdf":     "application/pdf",
	".zip":     "application/zip",
	".gz":      "application/gzip",
	".tar":     "application/x-tar",
	".parquet": "application/vnd.apache.parquet",
	".npy":     "application/octet-stream",
	".pkl":     "application/octet-stream",
	".xlsx":    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	".docx":    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	".wav":     "audio/wav",
	".mp3":     "audio/mpeg",
	".mp4":     "video/mp4",
}

// mimeType guesses from the extension first, the way browsers will treat
// the file when it is downloaded, then from the content (head may be nil
// when it was not read). Parameters such as charset are dropped: the type
// describes the file, not an HTTP body.
func mimeType(name string, head []byte) string {
	ext := strings.ToLower(path.Ext(name))
	if t, ok := knownTypes[ext]; ok {
		return t
	}
	t := mime.TypeByExtension(ext)
	if t == "" {
		if head == nil {
			return "application/octet-stream"
		}
		t = http.DetectContentType(head)
	}
	if base, _, err := mime.ParseMediaType(t); err == nil {
		return base
	}
	return t
}

// listFiles returns the relative paths of everything but directories under
// dir, hidden or not: the files of the executor that must not be taken for
// the program's artifacts.
func listFiles(dir string) (map[string]bool, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("unable to open workspace: %w", err)
	}
	defer root.Close()
	files := map[string]bool{}
	err = fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			files[rel] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("unable to list workspace: %w", err)
	}
	return files, nil
}
