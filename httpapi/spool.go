package httpapi

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// CodeSpoolFull refuses an /execute request while too many results wait
// for the control plane.
const CodeSpoolFull = "spool_full"

// spooler is a Reporter that bounds the results it has not delivered yet;
// *controlplane.Reporter is one.
type spooler interface {
	Spool() (results int, bytes int64)
	SpoolFull() bool
}

// spoolGate refuses new /execute executions while the reporter's spool is
// full, so that a control plane that is down cannot make the server hold
// ever more results, and says so in the metrics.
type spoolGate struct {
	sp      spooler
	refused prometheus.Counter
}

// newSpoolGate registers the spool's metrics; nil when rep keeps no
// bounded spool.
func newSpoolGate(rep Reporter, reg prometheus.Registerer) *spoolGate {
	sp, ok := rep.(spooler)
	if !ok {
		return nil
	}
	g := &spoolGate{sp: sp, refused: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "coderunner_spool_rejections_total",
		Help: "/execute requests refused with 503 because too many results were waiting for the control plane.",
	})}
	reg.MustRegister(g.refused,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "coderunner_spool_results",
			Help: "Results stored and not yet delivered to the control plane.",
		}, func() float64 { n, _ := sp.Spool(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "coderunner_spool_bytes",
			Help: "Size of the results not yet delivered to the control plane.",
		}, func() float64 { _, b := sp.Spool(); return float64(b) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "coderunner_spool_full",
			Help: "1 while the spool is full and /execute is refused, else 0.",
		}, func() float64 {
			if sp.SpoolFull() {
				return 1
			}
			return 0
		}))
	return g
}

// refuse answers 503 and reports true when the spool is full.
func (g *spoolGate) refuse(w http.ResponseWriter, r *http.Request) bool {
	if g == nil || !g.sp.SpoolFull() {
		return false
	}
	g.refused.Inc()
	writeError(w, r, http.StatusServiceUnavailable, CodeSpoolFull,
		"too many results are waiting for the control plane; retry later")
	return true
}
