package execute_test

import (
	"context"
	"testing"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox/native"
)

// BenchmarkExecuteBashTrue is /v1/run's work for a trivial bash script
// without the HTTP layer: the language checked, a capped host workspace
// made, the script written, the native sandbox's run, the artifacts
// listed and the workspace removed.
func BenchmarkExecuteBashTrue(b *testing.B) {
	if !capws.Supported() {
		b.Skip("a capped host workspace needs root")
	}
	be, err := native.New(native.Options{Warm: 2})
	if err != nil {
		b.Skipf("native backend unavailable: %v", err)
	}
	defer be.Close()
	e := execute.New(be, lang.Default(), execute.Options{TempDir: b.TempDir()})
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
