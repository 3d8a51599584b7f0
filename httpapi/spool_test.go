package httpapi

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// spoolReporter is a Reporter whose spool is full while full is set.
type spoolReporter struct{ full atomic.Bool }

func (*spoolReporter) Start() int                                { return 0 }
func (*spoolReporter) Ready(int)                                 {}
func (*spoolReporter) Heartbeat(string) func()                   { return func() {} }
func (*spoolReporter) Result(string, any) error                  { return nil }
func (*spoolReporter) Flush(context.Context) error               { return nil }
func (*spoolReporter) Exited(context.Context, int, string) error { return nil }
func (*spoolReporter) Close() error                              { return nil }
func (r *spoolReporter) SpoolFull() bool                         { return r.full.Load() }
func (r *spoolReporter) Spool() (int, int64) {
	if r.full.Load() {
		return 1000, 12345
	}
	return 0, 0
}

// TestSpoolFullRefusesExecute: while the results waiting for the control
// plane fill the spool, /execute is refused with 503 spool_full and
// Retry-After before anything runs, and the metrics say so; once the spool
// drains it runs again.
func TestSpoolFullRefusesExecute(t *testing.T) {
	rep := &spoolReporter{}
	rep.full.Store(true)
	s, fe := newTestServer(t, func(o *Options) { o.Reporter = rep })
	rec := do(t, s, "POST", "/execute", validExecute, nil)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || errOf(t, rec).Code != CodeSpoolFull {
		t.Fatalf("/execute with a full spool: %d %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	fe.mu.Lock()
	n := len(fe.runs)
	fe.mu.Unlock()
	if n != 0 {
		t.Errorf("%d executions ran with a full spool", n)
	}
	m := do(t, s, "GET", "/metrics", "", nil).Body.String()
	for _, want := range []string{"coderunner_spool_full 1", "coderunner_spool_results 1000", "coderunner_spool_bytes 12345", "coderunner_spool_rejections_total 1"} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	rep.full.Store(false)
	if rec := do(t, s, "POST", "/execute", validExecute, nil); rec.Code != http.StatusOK {
		t.Fatalf("/execute once the spool drained: %d %s", rec.Code, rec.Body)
	}
	if m := do(t, s, "GET", "/metrics", "", nil).Body.String(); !strings.Contains(m, "coderunner_spool_full 0\n") {
		t.Error("coderunner_spool_full is not 0 once the spool drained")
	}
}
