package execute_test

import (
	"context"
	"testing"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox/native"
)

// BenchmarkExecuteBashTrue is /v1/run's work for a trivial bash script
// without the HTTP layer, with the executor set up as serve's is: the
// language checked, the script sent with the run, the native sandbox's
// run in its private workspace, which comes back to list the artifacts.
func BenchmarkExecuteBashTrue(b *testing.B) {
	be, err := native.New(native.Options{Warm: 2})
	if err != nil {
		b.Skipf("native backend unavailable: %v", err)
	}
	defer be.Close()
	e := execute.New(be, lang.Default(), execute.Options{TempDir: b.TempDir(), KeepWorkspaceDirs: true})
	req := execute.Request{Language: "bash", Code: "true"}
	for b.Loop() {
		res, err := e.Execute(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if res.Status != "success" {
			b.Fatalf("status %s: %s", res.Status, res.Stderr)
		}
	}
}
