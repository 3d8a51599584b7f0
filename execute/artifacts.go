package execute

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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

// CollectArtifacts lists the regular files under the host directory dir, a
// workspace a sandboxed program wrote to, with their size, type, time and
// SHA-256. Hidden files and everything under hidden directories are left
// out (spec 002 FR-009), as are the paths for which skip returns true (the
// executor's own files). Symbolic links are neither listed nor followed.
//
// The program controlled the content of dir, so every access goes through
// an os.Root: no path the program planted can lead the host outside dir.
// Only MaxArtifacts files are listed.
func CollectArtifacts(dir string, skip func(rel string) bool) ([]Artifact, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("unable to open workspace: %w", err)
	}
	defer root.Close()

	var out []Artifact
	errFull := errors.New("enough artifacts")
	err = fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			// A directory the program made unreadable is not worth failing
			// the whole listing for.
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if rel == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || (skip != nil && skip(rel)) {
			return nil
		}
		if len(out) == MaxArtifacts {
			return errFull
		}
		a, err := describe(root, rel)
		if err != nil {
			return nil // it vanished or is unreadable: not an artifact
		}
		out = append(out, a)
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return out, fmt.Errorf("unable to list artifacts: %w", err)
	}
	return out, nil
}

// describe reads one file beneath root.
func describe(root *os.Root, rel string) (Artifact, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return Artifact{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Artifact{}, err
	}
	if !info.Mode().IsRegular() {
		return Artifact{}, fmt.Errorf("%s is not a regular file", rel)
	}
	h := sha256.New()
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return Artifact{}, err
	}
	head = head[:n]
	h.Write(head)
	if _, err := io.Copy(h, f); err != nil {
		return Artifact{}, err
	}
	typ := "artifact"
	if path.Ext(rel) == ".log" {
		typ = "log"
	}
	return Artifact{
		Path:      rel,
		Size:      info.Size(),
		MimeType:  mimeType(rel, head),
		Type:      typ,
		CreatedAt: info.ModTime().UTC(),
		Checksum:  "sha256:" + hex.EncodeToString(h.Sum(nil)),
	}, nil
}

// mimeType guesses from the extension first, the way browsers will treat
// the file when it is downloaded, then from the content.
func mimeType(name string, head []byte) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return http.DetectContentType(head)
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
