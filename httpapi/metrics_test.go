package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// gathered returns the value of every counter and the sample count of
// every histogram of reg, by name and labels ("name{k=v,...}").
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// TestFinishedCountsEachOutcome checks the execution metrics, whose
// series are kept once made: outcomes that share an endpoint, a status
// or a reason are counted apart, and every execution is counted.
func TestFinishedCountsEachOutcome(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	for range 3 {
		m.finished("mcp", "success", "", time.Millisecond)
	}
	for range 2 {
		m.finished("mcp", "timeout", "time_limit", time.Second)
	}
	m.finished("mcp", "timeout", "wall_time_limit", time.Second)
	m.finished("run", "timeout", "wall_time_limit", time.Second)
	m.finished("mcp", "execution_error", "time_limit", time.Second)
	got := gathered(t, reg)
	want := map[string]float64{
		"coderunner_executions_total{endpoint=mcp,status=success}":                 3,
		"coderunner_executions_total{endpoint=mcp,status=timeout}":                 3,
		"coderunner_executions_total{endpoint=run,status=timeout}":                 1,
		"coderunner_executions_total{endpoint=mcp,status=execution_error}":         1,
		"coderunner_execution_failures_total{endpoint=mcp,reason=time_limit}":      3,
		"coderunner_execution_failures_total{endpoint=mcp,reason=wall_time_limit}": 1,
		"coderunner_execution_failures_total{endpoint=run,reason=wall_time_limit}": 1,
		"coderunner_execution_duration_seconds{endpoint=mcp}":                      7,
		"coderunner_execution_duration_seconds{endpoint=run}":                      1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "coderunner_execution") && want[k] == 0 {
			t.Errorf("unexpected series %s = %v", k, got[k])
		}
	}
}
