package execute

import (
	"testing"

	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

// testTable holds languages whose toolchain needs nothing from the host, so
// that these tests run anywhere: "script" is interpreted, "native" is
// compiled, "ghost" has a toolchain that does not exist.
func testTable(t *testing.T) *lang.Table {
	t.Helper()
	tab, err := lang.New(map[string]lang.Recipe{
		"script": {
			Aliases:    []string{"sc"},
			Extensions: []string{".sc"},
			Source:     "main.sc",
			Run:        []string{"/usr/bin/script-interp", "-q", "{source}"},
			Env:        []string{"PATH=/opt/script/bin:/usr/bin", "SCRIPT_MODE=safe"},
			Mounts:     []lang.RecipeMount{{Source: "/", Target: "/opt/script"}},
		},
		"native": {
			Compiled: true,
			Source:   "prog.nc",
			Compile:  []string{"/usr/bin/ncc", "-m{memory_mb}", "-o", "{binary}", "{source}"},
			// A request's flags from this list go at the end.
			CompilerFlags: []string{"-O[0-3]", "-D[A-Z]+=[0-9]+"},
			Run:           []string{"{binary}", "--mem={memory_mb}"},
		},
		"ghost": {
			Source:    "main.gh",
			Run:       []string{"{tool}", "{source}"},
			Toolchain: lang.Discovery{Paths: []string{"/nonexistent/coderunner-ghost"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// newTest returns an executor over a fake backend answering steps, each
// run in a host workspace, with its workspaces under a test directory.
func newTest(t *testing.T, steps ...sandboxtest.Step) (*Executor, *sandboxtest.Fake, string) {
	t.Helper()
	fb := &sandboxtest.Fake{T: t, HostWorkspace: true, Steps: steps}
	tmp := t.TempDir()
	return New(fb, testTable(t), Options{TempDir: tmp}), fb, tmp
}
