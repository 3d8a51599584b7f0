package execute_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/bwrap"
)

// seedScript plots with the real matplotlib and reports how it found its
// font list: the font manager's own log line ("Using fontManager
// instance from …" when it read the cache, "generated new fontManager"
// when it built one), the digest of the list as the run found it, and
// how many mounts there are beneath /tmp (none: the list is a copy).
// With CORRUPT set it then spoils its copy every way it can.
const seedScript = `import glob, hashlib, logging, os, sys
lg = logging.getLogger('matplotlib.font_manager')
lg.addHandler(logging.StreamHandler(sys.stdout))
lg.setLevel(logging.DEBUG)
paths = glob.glob('/tmp/matplotlib/fontlist-*.json')
print('found', len(paths))
print('sum', hashlib.sha256(open(paths[0], 'rb').read()).hexdigest())
print('mounts', sum(l.split()[4].startswith('/tmp/') for l in open('/proc/self/mountinfo')))
import matplotlib.pyplot as plt
plt.plot([1, 2, 3])
plt.savefig('out.png')
if os.environ.get('CORRUPT'):
    open(paths[0], 'w').write('{"_version": 330, "ttflist": "garbage"')
    os.rename('/tmp/matplotlib', '/tmp/elsewhere')
    os.symlink('/workspace', '/tmp/matplotlib')
    print('corrupted')
`

// TestMatplotlibTmpSeed: once the Python runs' seed is built, a plotting
// script on native and on bwrap reads matplotlib's font list from its
// /tmp instead of building it, the list a copy in the run's own /tmp; a
// run that spoils its copy leaves the next run's as it was, read from
// the cache again.
func TestMatplotlibTmpSeed(t *testing.T) {
	testutil.RequirePythonModule(t, "matplotlib")
	for _, tc := range []struct {
		name string
		exec func(*testing.T) (*execute.Executor, sandbox.Backend)
	}{
		{"native", func(t *testing.T) (*execute.Executor, sandbox.Backend) {
			e := nativeExecutor(t)
			return e, nativeBe
		}},
		{"bwrap", bwrapExecutor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, be := tc.exec(t)
			if err := runner.NewBuilder(be, lang.Default(), runner.BuilderOptions{}).PrepareSeeds(context.Background()); err != nil {
				t.Fatalf("PrepareSeeds: %v", err)
			}
			run := func(env map[string]string) string {
				t.Helper()
				res, err := e.Execute(context.Background(), execute.Request{Language: "python", Code: seedScript, Env: env,
					Limits: execute.ExecutionLimits{TimeLimit: 120}})
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != execute.StatusSuccess || res.Stderr != "" {
					t.Fatalf("status %s stdout %q stderr %q", res.Status, res.Stdout, res.Stderr)
				}
				return res.Stdout
			}
			first := run(map[string]string{"CORRUPT": "1"})
			if !strings.Contains(first, "found 1\n") || !strings.Contains(first, "mounts 0\n") ||
				!strings.Contains(first, "Using fontManager instance from /tmp/matplotlib/fontlist-v") || !strings.Contains(first, "corrupted\n") {
				t.Fatalf("the first run:\n%s", first)
			}
			second := run(nil)
			sum := func(out string) string {
				_, after, _ := strings.Cut(out, "sum ")
				return strings.SplitN(after, "\n", 2)[0]
			}
			if sum(second) == "" || sum(second) != sum(first) ||
				!strings.Contains(second, "Using fontManager instance from /tmp/matplotlib/fontlist-v") || strings.Contains(second, "generated new fontManager") {
				t.Fatalf("after a run that spoiled its copy, the next:\n%s\nthe first:\n%s", second, first)
			}
		})
	}
}

// bwrapExecutor is an executor on a bwrap backend of the test's own (a
// state directory and host uids apart from those of the other packages'
// tests), its workspaces where bwrap's uid reaches them.
func bwrapExecutor(t *testing.T) (*execute.Executor, sandbox.Backend) {
	testutil.RequireRoot(t)
	_, err := exec.LookPath("bwrap")
	testutil.Require(t, err == nil, "needs bwrap (apt-get install bubblewrap)")
	dir := testutil.ReachableDir(t, "execute-bwrap-")
	b, err := bwrap.New(bwrap.Options{StateDir: filepath.Join(dir, "state"), HostUIDBase: bwrap.DefaultHostUIDBase + 200_000})
	if err != nil {
		t.Fatalf("the bwrap backend does not work here: %v", err)
	}
	ws := filepath.Join(dir, "work")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return execute.New(b, lang.Default(), execute.Options{TempDir: ws}), b
}
