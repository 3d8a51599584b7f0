package hostws

import (
	"errors"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
)

// TestBindableRefusesKept: a workspace the keeper holds lives in its
// mount namespace alone; a backend that binds by path must refuse it
// rather than bind whatever its path leads to.
func TestBindableRefusesKept(t *testing.T) {
	if err := Bindable(&sandbox.Spec{Workspace: t.TempDir()}, "bwrap"); err != nil {
		t.Errorf("a plain workspace: %v", err)
	}
	if err := Bindable(&sandbox.Spec{}, "bwrap"); err != nil {
		t.Errorf("no workspace: %v", err)
	}
	d, err := capws.InKeeper(t.TempDir(), "kept-", 1<<20, 0)
	testutil.Require(t, !errors.Is(err, capws.ErrUnsupported), "user namespaces are not allowed here")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Remove() }()
	err = Bindable(&sandbox.Spec{Workspace: d.Path}, "docker")
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "docker") || !strings.Contains(err.Error(), "native backend") {
		t.Errorf("a kept workspace: %v, want ErrUnavailable naming docker and the native backend", err)
	}
}
