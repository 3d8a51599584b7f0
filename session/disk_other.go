//go:build !linux

package session

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

var errTooLarge = errors.New("workspace holds too many files or is nested too deep")

func ensureDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("sessions directory %q is not an absolute path", dir)
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return fmt.Errorf("unable to create the sessions directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("unable to inspect the sessions directory: %w", err)
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("sessions directory %s must be a directory no one else can write to", dir)
	}
	return nil
}

func lockInstance(dir, name string) (*os.File, string, error) {
	p := filepath.Join(dir, name+".lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("unable to create the sessions lock: %w", err)
	}
	return f, p, nil
}

// cleanStale does nothing where instances cannot be told alive by a lock.
func cleanStale(string, *slog.Logger) {}

func mountTmpfs(string, int64, int) error { return errors.New("tmpfs is not supported here") }

func isMountPoint(string) bool { return false }

func unmount(string) error { return nil }

func fsUsage(string) (int64, error) { return 0, errors.New("not supported") }

// treeUsage sums the sizes under dir with Lstat, never following links.
func treeUsage(dir string, maxEntries, maxDepth int) (int64, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	var total int64
	n := 0
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n++; n > maxEntries {
			return errTooLarge
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	return total, err
}

// removeTree removes path; os.RemoveAll does not follow links.
func removeTree(path string) error { return os.RemoveAll(path) }
