package native_test

import (
	"testing"

	"github.com/coderunner/coderunner/internal/judgetest"
	"github.com/coderunner/coderunner/lang"
)

// TestLanguages judges a program in every language of the default table
// through runner and judge on the native backend, with the host's
// toolchains (judgetest.Languages): accepted, wrong answer and runtime
// error in one request, a compilation error and a memory hog for compiled
// languages. Rust's rustup toolchain lives under root's private home,
// which the host uid that starts each sandbox cannot reach by itself: the
// backend opens it for the sandbox.
func TestLanguages(t *testing.T) {
	b := newBackend(t)
	t.Cleanup(func() { _ = b.Close() })
	judgetest.Languages(t, b, lang.Default(), nil)
}
