package invoke

import (
	"context"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

// hostBackend runs every spec's program directly on the host, with no
// isolation at all: it lets the wrappers be tested where no sandbox works.
func hostBackend() *sandboxtest.Fake {
	return &sandboxtest.Fake{BackendName: "host", Default: sandboxtest.OnHost}
}

// requireToolchain skips a test whose language has no toolchain here.
func requireToolchain(t *testing.T, id string) {
	t.Helper()
	l, err := lang.Default().Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	tc := l.Discover(context.Background())
	testutil.Require(t, tc.Available, id+" is not available here: "+tc.Reason)
}
