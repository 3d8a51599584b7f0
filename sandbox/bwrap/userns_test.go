package bwrap_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/bwrap"
)

// inPodNamespace marks the copy of the test binary that
// TestRootOfAPodsUserNamespace runs as root of a user namespace of 65536
// ids.
const inPodNamespace = "CODERUNNER_TEST_IN_POD_NAMESPACE"

// TestRootOfAPodsUserNamespace starts the backend as root of a user
// namespace that maps 65536 ids, as a Kubernetes pod with hostUsers:
// false has by default: the uids bwrap runs as do not exist there, and
// the backend must say so, naming the kubelet's setting, rather than let
// every sandbox fail with EINVAL.
func TestRootOfAPodsUserNamespace(t *testing.T) {
	_, err := exec.LookPath("bwrap")
	testutil.Require(t, err == nil, "no bwrap binary")
	if os.Getenv(inPodNamespace) != "1" {
		out, err := testutil.InUserNamespace(t, "TestRootOfAPodsUserNamespace", 65536, inPodNamespace+"=1")
		if err != nil || !strings.Contains(out, "--- PASS: TestRootOfAPodsUserNamespace") {
			t.Fatalf("as root of a user namespace of 65536 ids: %v\n%s", err, out)
		}
		t.Logf("as root of a user namespace of 65536 ids:\n%s", out)
		return
	}
	_, err = bwrap.New(bwrap.Options{})
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "userNamespaces.idsPerPod") {
		t.Fatalf("New = %v, want the backend unavailable for the unmapped uids", err)
	}
	t.Log(err)
}
