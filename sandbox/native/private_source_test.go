package native_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
)

// TestSourceBelowPrivateDirectory mounts a toolchain kept below a
// directory only root may search, as rustup's under /root: the host uid
// that starts each sandbox (and owns its user namespace) cannot open it,
// so the backend opens it in the sandbox's copy of the host's tree and
// sends it. Both ways sandboxes clone their mounts are covered (a
// detached copy of the host's tree, and the tree kept attached as before
// Linux 6.15), each with a sandbox started for the run and one started
// ahead of need that learned the source from the run before.
func TestSourceBelowPrivateDirectory(t *testing.T) {
	testutil.RequireRoot(t)
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(private, "toolchain")
	if err := os.MkdirAll(filepath.Join(tool, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tool, "bin", "version"), []byte("toolchain 1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	single := filepath.Join(private, "config.txt")
	if err := os.WriteFile(single, []byte("single file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts native.Options
	}{
		{"detached", native.Options{Warm: 1}},
		{"attached", native.WithHostTreeAttached(native.Options{Warm: 1})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := native.New(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			spec := func() *sandbox.Spec {
				return &sandbox.Spec{
					Args: []string{"/bin/cat", "/opt/tool/bin/version", "/etc/tool.txt"},
					Mounts: append(native.BaseMounts(),
						sandbox.Mount{Source: tool, Target: "/opt/tool"},
						sandbox.Mount{Source: single, Target: "/etc/tool.txt"}),
					Limits: sandbox.Limits{WallTime: 10 * time.Second},
				}
			}
			want := "toolchain 1.0\nsingle file\n"
			run := func(s *sandbox.Spec, want string) {
				t.Helper()
				var out bytes.Buffer
				s.Stdout = &out
				res, err := b.Run(context.Background(), s)
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != sandbox.StatusOK || out.String() != want {
					t.Fatalf("%s, exit %d, output %q, want %q", res.Status, res.ExitCode, out.String(), want)
				}
			}
			if !native.WaitWarm(b) {
				t.Fatal("no sandbox started ahead of need")
			}
			// The sandbox started ahead of need did not open the
			// sources: one is started for the run, and the backend
			// learns them.
			run(spec(), want)
			// A run without them takes the one ready; the next one
			// started ahead of need opens the learned sources.
			run(&sandbox.Spec{Args: []string{"/bin/true"}, Mounts: native.BaseMounts(), Limits: sandbox.Limits{WallTime: 10 * time.Second}}, "")
			if !native.WaitWarm(b) {
				t.Fatal("no sandbox started ahead of need")
			}
			run(spec(), want)
			if n := native.ColdStarts(b); n != 1 {
				t.Fatalf("%d sandboxes started for a run, want 1: the later runs should find the sources opened ahead", n)
			}
		})
	}
}
