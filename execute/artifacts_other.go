//go:build !linux

package execute

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// scan walks dir through an os.Root, which keeps every open inside dir
// where openat2 is not available.
func (s *scanner) scan(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("unable to open workspace: %w", err)
	}
	defer root.Close()
	err = fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if rel == "." {
			return err
		}
		if e := s.entry(); e != nil {
			return e
		}
		if err != nil {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") || (d.IsDir() && strings.Count(rel, "/")+1 >= s.lim.MaxDepth) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !s.wanted(rel) {
			return nil
		}
		if len(s.out) >= s.lim.MaxFiles {
			return errScanFull
		}
		f, err := root.OpenFile(rel, os.O_RDONLY|openFlags, 0)
		if err != nil {
			return nil
		}
		defer f.Close()
		if a, err := s.describe(f, rel); err == nil {
			s.out = append(s.out, a)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errScanFull) {
		return fmt.Errorf("unable to list artifacts: %w", err)
	}
	return err
}
