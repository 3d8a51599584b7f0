package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coderunner/coderunner/internal/capws"
)

// cacheFormat is part of every key: changing how entries are laid out
// changes it, so that old entries are never misread.
const cacheFormat = 1

// Layout of the cache directory. Entries are complete when they appear in
// entriesDir (they are renamed there from tmpDir) and never change after.
const (
	entriesDir = "entries"
	tmpDir     = "tmp"
	// staleAge is the age at which a file in tmpDir is left over by a
	// process that died: no compile lasts that long.
	staleAge = time.Hour
	// sumFile, in an entry, holds the digest of the rest of the entry
	// (treeDigest), written before the entry is renamed into place and
	// checked each time the entry is taken.
	sumFile = ".coderunner-sum"
)

// KeyInput is what identifies a compiled program: the same inputs always
// compile to the same program, so a cache entry made from them can stand
// in for a compilation.
type KeyInput struct {
	// Language is the language id.
	Language string `json:"language"`
	// Toolchain is the toolchain's version line.
	Toolchain string `json:"toolchain"`
	// Environment is where the compiler runs: the backend's name, and the
	// image for a backend that runs each language in its own image, whose
	// compiler need not be the host's.
	Environment string `json:"environment"`
	// Args is the expanded compile argv.
	Args []string `json:"args"`
	// Env is the complete environment of the compile step.
	Env []string `json:"env"`
	// Source is the source file name (it carries the Java class).
	Source string `json:"source"`
	// SourceSHA256 is the hex SHA-256 of the source code.
	SourceSHA256 string `json:"source_sha256"`
	// Files are every file of a program of several files (the code's
	// included), in the order they are written; nil for a program of its
	// code alone, whose key is as it always was.
	Files []FileKey `json:"files,omitempty"`
}

// FileKey is one file of a program of several files in its cache key.
type FileKey struct {
	Path   string `json:"path"`
	Mode   uint32 `json:"mode"`
	SHA256 string `json:"sha256"`
}

// Key returns the cache key of k: the hex SHA-256 of its canonical
// encoding and of the cache format.
func (k KeyInput) Key() string {
	b, err := json.Marshal(struct {
		Format int `json:"format"`
		KeyInput
	}{cacheFormat, k})
	if err != nil {
		// Strings and string slices always encode.
		panic("runner: encoding a cache key: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// cache is the on-disk store of compiled programs, bounded in size with
// least-recently-used eviction. The modification time of an entry's
// directory is its last use. An entry in use is held with a shared flock on
// its directory, which eviction (an exclusive, non-blocking flock) never
// breaks, whichever process holds it.
type cache struct {
	dir      string
	entries  string
	tmp      string
	maxBytes int64
	log      *slog.Logger

	mu    sync.Mutex
	inUse map[string]int // key -> holders in this process
}

// entry is a cache entry held by a Program.
type entry struct {
	c    *cache
	key  string
	dir  string
	lock *os.File
	once sync.Once
}

func openCache(dir string, maxBytes int64, log *slog.Logger) (*cache, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("runner: cache directory: %w", err)
	}
	c := &cache{
		dir:      dir,
		entries:  filepath.Join(dir, entriesDir),
		tmp:      filepath.Join(dir, tmpDir),
		maxBytes: maxBytes,
		log:      log,
		inUse:    map[string]int{},
	}
	// The sandbox's users mount entries and compile workspaces from here:
	// they must be able to reach them, and nothing else.
	for _, d := range []struct {
		path string
		mode fs.FileMode
	}{{c.dir, 0o755}, {c.entries, 0o755}, {c.tmp, 0o711}} {
		if err := os.MkdirAll(d.path, d.mode); err != nil { //nolint:forbidigo // the cache directory, host-owned
			return nil, fmt.Errorf("runner: unable to create the cache directory: %w", err)
		}
		if err := os.Chmod(d.path, d.mode); err != nil { //nolint:forbidigo // the cache directory, host-owned
			return nil, fmt.Errorf("runner: unable to set the mode of %s: %w", d.path, err)
		}
	}
	if err := checkReachable(c.dir); err != nil {
		return nil, err
	}
	c.removeStale()
	return c, nil
}

// checkReachable makes sure that another user can reach dir: as root, the
// sandbox's users must bind-mount entries from under it.
func checkReachable(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d) //nolint:forbidigo // the cache directory's parents, host-owned
		if err != nil {
			return fmt.Errorf("runner: cache directory: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("runner: cache directory %s is not reachable by the sandbox: %s is not searchable by others (mode %v)", dir, d, fi.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// treeDigest is the hex SHA-256 of the tree at dir: every path with its
// type and permissions, and each file's size and content (a link's
// target), in lexical order, the sum file excepted. It never follows a
// link.
func treeDigest(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error { //nolint:forbidigo // cache entries hold only what copyOut wrote; WalkDir follows no link
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == sumFile {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%q %s", rel, fi.Mode())
		switch {
		case fi.Mode().IsRegular():
			fmt.Fprintf(h, " %d\n", fi.Size())
			f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0) //nolint:gosec,forbidigo // the cache holds only what the runner wrote; no link is followed at the end
			if err != nil {
				return err
			}
			n, err := io.Copy(h, f)
			_ = f.Close()
			if err != nil {
				return err
			}
			if n != fi.Size() {
				return fmt.Errorf("%s changed while it was read", rel)
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p) //nolint:forbidigo // reads a link's target, never follows it
			if err != nil {
				return err
			}
			fmt.Fprintf(h, " %q\n", t)
		default:
			h.Write([]byte{'\n'})
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeSum records the digest of the staged entry dir in it.
func writeSum(dir string) error {
	sum, err := treeDigest(dir)
	if err != nil {
		return fmt.Errorf("unable to checksum the compiled program: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, sumFile), []byte(sum+"\n"), 0o444) //nolint:forbidigo // the staged entry, host-owned
}

// checkSum fails unless the entry dir has the digest it was stored with.
func checkSum(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, sumFile), os.O_RDONLY|syscall.O_NOFOLLOW, 0) //nolint:forbidigo // the entry's digest file, O_NOFOLLOW
	if err != nil {
		return fmt.Errorf("no digest: %w", err)
	}
	want, err := io.ReadAll(io.LimitReader(f, 128))
	_ = f.Close()
	if err != nil {
		return err
	}
	got, err := treeDigest(dir)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(want)) != got {
		return errors.New("its files differ from those stored")
	}
	return nil
}

// removeStale removes what dead processes left in tmp.
func (c *cache) removeStale() {
	ents, err := os.ReadDir(c.tmp) //nolint:forbidigo // the cache's tmp directory, host-owned
	if err != nil {
		return
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < staleAge {
			continue
		}
		// A compile workspace is a tmpfs: unmounted, nothing of it is
		// walked.
		if err := capws.Unmount(filepath.Join(c.tmp, e.Name())); err != nil {
			c.log.Warn("unable to unmount a stale compile directory", "error", err)
		}
		if err := removeTree(filepath.Join(c.tmp, e.Name())); err != nil {
			c.log.Warn("unable to remove a stale compile directory", "path", filepath.Join(c.tmp, e.Name()), "error", err)
		}
	}
}

// mkTemp creates a private directory in tmp, on the same file system as
// the entries so that it can be renamed into place.
func (c *cache) mkTemp(prefix string) (string, error) {
	d, err := os.MkdirTemp(c.tmp, prefix) //nolint:forbidigo // the cache's tmp directory, host-owned
	if err != nil {
		return "", fmt.Errorf("unable to create a directory in the cache: %w", err)
	}
	return d, nil
}

// open takes the entry of key if it is there and intact, and marks it
// used.
func (c *cache) open(key string) (*entry, bool, error) {
	p := filepath.Join(c.entries, key)
	f, err := os.OpenFile(p, os.O_RDONLY|noFollowDir, 0) //nolint:forbidigo // the cache entry's name, O_NOFOLLOW
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("unable to open cache entry: %w", err)
	}
	if err := lockShared(f); err != nil {
		_ = f.Close()
		return nil, false, fmt.Errorf("unable to lock cache entry: %w", err)
	}
	// An eviction may have taken the entry away while we waited for the
	// lock: what we hold must still be what the name points to.
	held, err1 := f.Stat()
	now, err2 := os.Lstat(p) //nolint:forbidigo // the cache entry's name, host-owned
	if err1 != nil || err2 != nil || !os.SameFile(held, now) {
		_ = f.Close()
		return nil, false, nil
	}
	// A damaged entry (truncated or changed files, changed permissions,
	// no digest) is never run: it goes, and the caller compiles again.
	if err := checkSum(p); err != nil {
		_ = f.Close()
		c.log.Warn("a cache entry is damaged; compiling again", "event", "cache_damaged", "key", key, "error", err)
		if _, err := c.remove(key); err != nil {
			c.log.Warn("unable to remove a damaged cache entry", "key", key, "error", err)
		}
		return nil, false, nil
	}
	c.mu.Lock()
	c.inUse[key]++
	c.mu.Unlock()
	t := time.Now()
	if err := os.Chtimes(p, t, t); err != nil { //nolint:forbidigo // the cache entry, host-owned
		c.log.Warn("unable to mark a cache entry used", "key", key, "error", err)
	}
	return &entry{c: c, key: key, dir: p, lock: f}, true, nil
}

// insert moves the complete directory staged into the cache as key and
// takes it. When another process inserted key meanwhile, staged is
// dropped and the other entry taken.
func (c *cache) insert(key, staged string) (*entry, error) {
	p := filepath.Join(c.entries, key)
	err := writeSum(staged)
	if err == nil {
		err = os.Rename(staged, p) //nolint:forbidigo // the staged entry into the cache, both host-owned
	}
	if err != nil {
		if rmErr := removeTree(staged); rmErr != nil {
			c.log.Warn("unable to remove a staged cache entry", "path", staged, "error", rmErr)
		}
		if !errors.Is(err, fs.ErrExist) && !isNotEmpty(err) {
			return nil, fmt.Errorf("unable to store the compiled program: %w", err)
		}
	}
	e, ok, err := c.open(key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("the compiled program left the cache as soon as it was stored")
	}
	c.evict()
	return e, nil
}

// release lets the entry be evicted again.
func (e *entry) release() error {
	var err error
	e.once.Do(func() {
		e.c.mu.Lock()
		if e.c.inUse[e.key]--; e.c.inUse[e.key] <= 0 {
			delete(e.c.inUse, e.key)
		}
		e.c.mu.Unlock()
		err = e.lock.Close()
	})
	return err
}

// evict removes the least recently used entries not in use until the
// cache fits in maxBytes.
func (c *cache) evict() {
	c.mu.Lock()
	defer c.mu.Unlock()
	items, total := c.scan()
	if total <= c.maxBytes {
		return
	}
	sort.Slice(items, func(i, j int) bool { return items[i].used.Before(items[j].used) })
	for _, it := range items {
		if total <= c.maxBytes {
			break
		}
		if c.inUse[it.key] > 0 {
			continue
		}
		removed, err := c.remove(it.key)
		if err != nil {
			c.log.Warn("unable to evict a cache entry", "key", it.key, "error", err)
		}
		if removed {
			total -= it.size
		}
	}
}

type cacheItem struct {
	key  string
	used time.Time
	size int64
}

// scan lists the entries with their last use and size.
func (c *cache) scan() ([]cacheItem, int64) {
	ents, err := os.ReadDir(c.entries) //nolint:forbidigo // the cache's entries directory, host-owned
	if err != nil {
		c.log.Warn("unable to list the cache", "error", err)
		return nil, 0
	}
	var items []cacheItem
	var total int64
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		it := cacheItem{key: e.Name(), used: fi.ModTime(), size: treeSize(filepath.Join(c.entries, e.Name()))}
		items = append(items, it)
		total += it.size
	}
	return items, total
}

// remove takes key out of the cache unless some process holds it.
func (c *cache) remove(key string) (bool, error) {
	p := filepath.Join(c.entries, key)
	f, err := os.OpenFile(p, os.O_RDONLY|noFollowDir, 0) //nolint:forbidigo // the cache entry's name, O_NOFOLLOW
	if err != nil {
		return false, err
	}
	defer f.Close()
	ok, err := tryLockExclusive(f)
	if !ok || err != nil {
		return false, err
	}
	trash, err := os.MkdirTemp(c.tmp, "evicted-") //nolint:forbidigo // the cache's tmp directory, host-owned
	if err != nil {
		return false, err
	}
	// Renamed while locked, so that no one can take it once we let go.
	if err := os.Rename(p, filepath.Join(trash, key)); err != nil { //nolint:forbidigo // both paths in the cache, host-owned
		_ = os.Remove(trash) //nolint:forbidigo // the empty directory just made
		return false, err
	}
	return true, removeTree(trash)
}

// treeSize is the disk use of a directory of the cache, which holds only
// what the runner wrote.
func treeSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error { //nolint:forbidigo // cache entries hold only what copyOut wrote; WalkDir follows no link
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// removeTree removes a directory the runner owns. Entries are read-only,
// so write permission is given back to each directory first (as root it
// is not needed). It never follows a symbolic link.
func removeTree(dir string) error {
	err := os.RemoveAll(dir) //nolint:forbidigo // a tree of the runner's; RemoveAll follows no link
	if err == nil || os.Geteuid() == 0 {
		return err
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error { //nolint:forbidigo // a tree of the runner's; WalkDir follows no link
		if err == nil && d.IsDir() {
			// Nothing runs in the tree any more, so nothing can swap
			// a directory for a link under the walk.
			_ = os.Chmod(p, 0o755) //nolint:gosec,forbidigo // see above
		}
		return nil
	})
	return os.RemoveAll(dir) //nolint:forbidigo // a tree of the runner's; RemoveAll follows no link
}

func isNotEmpty(err error) bool { return errors.Is(err, syscall.ENOTEMPTY) }
