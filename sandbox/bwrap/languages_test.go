package bwrap_test

import (
	"testing"

	"github.com/coderunner/coderunner/internal/judgetest"
	"github.com/coderunner/coderunner/lang"
)

// TestLanguages judges a program in every language of the default table
// through runner and judge on the bwrap backend, with the host's
// toolchains (judgetest.Languages): accepted, wrong answer and runtime
// error in one request, a compilation error and a memory hog for compiled
// languages. Rust's rustup toolchain lives under root's private home,
// which bwrap's uid cannot reach by itself.
func TestLanguages(t *testing.T) {
	judgetest.Languages(t, newBackend(t), lang.Default(), nil)
}
