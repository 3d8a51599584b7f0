package runner_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/runner"
)

// TestCacheDamaged: a cache entry whose program was truncated, replaced
// by garbage of the same size or made unreadable, or whose
// digest is missing, is not run: the program is compiled again and runs
// right.
func TestCacheDamaged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, entry string)
	}{
		{"truncated", func(t *testing.T, entry string) {
			must(t, os.Truncate(filepath.Join(entry, lang.DefaultBinary), 100))
		}},
		{"garbage", func(t *testing.T, entry string) {
			p := filepath.Join(entry, lang.DefaultBinary)
			fi, err := os.Stat(p)
			must(t, err)
			must(t, os.Chmod(p, 0o755))
			must(t, os.WriteFile(p, make([]byte, fi.Size()), 0o755))
		}},
		{"unreadable", func(t *testing.T, entry string) {
			must(t, os.Chmod(filepath.Join(entry, lang.DefaultBinary), 0))
		}},
		{"entry directory closed", func(t *testing.T, entry string) {
			must(t, os.Chmod(entry, 0o700))
		}},
		{"digest removed", func(t *testing.T, entry string) {
			must(t, os.Chmod(entry, 0o755))
			must(t, os.Remove(filepath.Join(entry, ".coderunner-sum")))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, be := newRunner(t, runner.Options{CacheDir: testutil.ReachableDir(t, "runner-test-")})
			prepare(t, r, "c", cProgram(7)).Close()
			ents := entries(t, r)
			if len(ents) != 1 {
				t.Fatalf("%d cache entries, want 1", len(ents))
			}
			entry := filepath.Join(r.CacheDir(), "entries", ents[0])
			if os.Geteuid() != 0 {
				// Entries are read-only to their owner too.
				must(t, os.Chmod(entry, 0o755))
				_ = os.Chmod(filepath.Join(entry, lang.DefaultBinary), 0o755)
			}
			tc.damage(t, entry)
			// Another runner on the same directory: a later process.
			r2, err := runner.New(be, lang.Default(), runner.Options{CacheDir: r.CacheDir()})
			must(t, err)
			p := prepare(t, r2, "c", cProgram(7))
			defer p.Close()
			if n := be.runs.Load(); n != 2 {
				t.Fatalf("the damaged entry was taken: %d compiles, want 2", n)
			}
			runOK(t, p, "7\n")
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
