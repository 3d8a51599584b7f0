package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/sandbox"
)

// refusingRunner refuses every run as a backend without a usable cgroup
// does.
type refusingRunner struct{}

func (refusingRunner) Execute(context.Context, execute.Request) (*execute.Result, error) {
	return nil, sandbox.NoCgroupError(errors.New("cgroups unavailable: /sys/fs/cgroup/memory/secret-path is not delegated"))
}

// TestRunRefusedWithoutCgroup: a run refused for want of a cgroup is the
// server's state, 503, said plainly, without the host's paths.
func TestRunRefusedWithoutCgroup(t *testing.T) {
	s, _ := newTestServer(t, func(o *Options) { o.Runner = refusingRunner{} })
	rec := do(t, s, "POST", "/v1/run", `{"language":"python","code":"print(1)"}`, nil)
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503: %s", rec.Code, rec.Body)
	}
	e := errOf(t, rec)
	if e.Code != CodeUnavailable || !strings.Contains(e.Message, "no usable cgroup") {
		t.Errorf("error %+v, want %s saying there is no usable cgroup", e, CodeUnavailable)
	}
	if strings.Contains(rec.Body.String(), "secret-path") {
		t.Errorf("the answer shows the host's cgroup paths: %s", rec.Body)
	}
}
