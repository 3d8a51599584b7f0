//go:build linux

package execute_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/lang"
)

// TestPrivateWorkspaceNative runs interpreted programs on the native
// backend, which hands each run's private workspace back: the artifacts
// are what the program wrote (not its source, a hidden file, a link to a
// host file or a FIFO), also when it was stopped at its time limit, and
// the host never made a workspace of its own.
func TestPrivateWorkspaceNative(t *testing.T) {
	nativeExecutor(t) // the shared backend
	tmp := t.TempDir()
	e := execute.New(nativeBe, lang.Default(), execute.Options{TempDir: tmp, KeepWorkspaceDirs: true})
	defer e.Close()
	for _, tt := range []struct {
		name, code string
		status     execute.Status
		timeout    float64
	}{
		{"normal end", "echo result > out.txt; echo x > .hidden; ln -s /etc/shadow shadow; mkfifo fifo; mkdir -p d; echo y > d/y.log", execute.StatusSuccess, 0},
		{"time limit", "echo result > out.txt; mkdir -p d; echo y > d/y.log; sleep 60", execute.StatusTimeout, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := execute.Request{Language: "bash", Code: tt.code}
			if tt.timeout > 0 {
				req.Limits.TimeLimit = tt.timeout
			}
			res, err := e.Execute(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tt.status {
				t.Fatalf("status %s, want %s (stderr %q)", res.Status, tt.status, res.Stderr)
			}
			var paths []string
			for _, a := range res.Artifacts {
				paths = append(paths, a.Path)
			}
			if want := []string{"d/y.log", "out.txt"}; !slices.Equal(paths, want) {
				t.Errorf("artifacts %v, want %v", paths, want)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("the host made a workspace: %v", left)
			}
		})
	}
}
