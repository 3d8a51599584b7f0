package interp_test

import (
	"testing"

	_ "github.com/coderunner/coderunner/sandbox/bwrap"
)

// TestBwrap runs the interpreter suite on the bwrap backend.
func TestBwrap(t *testing.T) {
	runSuite(t, target{name: "bwrap", open: openRegistered("bwrap"), hostToolchains: true})
}
