package httpapi

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the service's Prometheus collectors (execution_count, success_rate, failure_reasons, latency histograms and
// active_executions gauge, and the queue depth).
type metrics struct {
	executions *prometheus.CounterVec
	failures   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	reporting  *prometheus.HistogramVec
	active     prometheus.Gauge
	queued     prometheus.Gauge
	refused    prometheus.Counter
	requests   *prometheus.CounterVec

	// By API key name (a bounded set: the configured keys).
	keyRequests  *prometheus.CounterVec
	keyLimited   *prometheus.CounterVec
	keyActive    *prometheus.GaugeVec
	authFailures prometheus.Counter

	outcomes sync.Map // outcome → *outcomeMetrics
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		executions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coderunner_executions_total",
			Help: "Executions finished, by endpoint and status.",
		}, []string{"endpoint", "status"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coderunner_execution_failures_total",
			Help: "Executions that did not succeed, by endpoint and reason.",
		}, []string{"endpoint", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "coderunner_execution_duration_seconds",
			Help:    "Time from the start of an execution (after queueing) to its result.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		}, []string{"endpoint"}),
		reporting: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "coderunner_report_duration_seconds",
			Help:    "Time of one control plane call, by kind and outcome.",
			Buckets: []float64{.005, .01, .025, .05, .1, .2, .5, 1, 2.5, 5},
		}, []string{"kind", "outcome"}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "coderunner_active_executions",
			Help: "Executions running now.",
		}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "coderunner_queue_depth",
			Help: "Executions waiting for a running slot.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coderunner_queue_rejections_total",
			Help: "Requests refused with 503 because every slot and the queue were full.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coderunner_http_requests_total",
			Help: "HTTP requests, by route and status code.",
		}, []string{"route", "code"}),
		keyRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coderunner_api_key_requests_total",
			Help: "Requests authenticated, by API key name.",
		}, []string{"key"}),
		keyLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coderunner_api_key_limited_total",
			Help: "Requests refused with 429, by API key name and the limit they hit.",
		}, []string{"key", "limit"}),
		keyActive: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "coderunner_api_key_executions",
			Help: "Executions running or waiting for a slot, by API key name.",
		}, []string{"key"}),
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coderunner_auth_failures_total",
			Help: "Requests refused with 401: no or a wrong API key.",
		}),
	}
	reg.MustRegister(m.executions, m.failures, m.duration, m.reporting, m.active, m.queued, m.refused, m.requests,
		m.keyRequests, m.keyLimited, m.keyActive, m.authFailures,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// finished counts one execution.
func (m *metrics) finished(endpoint, status, reason string, took time.Duration) {
	key := outcome{endpoint, status, reason}
	c, ok := m.outcomes.Load(key)
	if !ok {
		// Kept once made, as the vectors keep the series: an execution's
		// metrics are then found with one lookup, rather than three of
		// label values, each hashed and checked under its vector's lock.
		oc := &outcomeMetrics{
			executions: m.executions.WithLabelValues(endpoint, status),
			duration:   m.duration.WithLabelValues(endpoint),
		}
		if reason != "" {
			oc.failures = m.failures.WithLabelValues(endpoint, reason)
		}
		c, _ = m.outcomes.LoadOrStore(key, oc)
	}
	oc := c.(*outcomeMetrics)
	oc.executions.Inc()
	if oc.failures != nil {
		oc.failures.Inc()
	}
	oc.duration.Observe(took.Seconds())
}

// outcome is the labels of an execution's metrics.
type outcome struct{ endpoint, status, reason string }

// outcomeMetrics are the series an execution of one outcome counts in.
type outcomeMetrics struct {
	executions, failures prometheus.Counter // failures nil without a reason
	duration             prometheus.Observer
}

// Observe records one control plane call; it is the controlplane
// package's Options.Observe.
func (m *metrics) observeReport(kind string, took time.Duration, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.reporting.WithLabelValues(kind, outcome).Observe(took.Seconds())
}

// requestCounters returns the counter of requests to route by status
// code. Each counter is kept once made: the request log's metric would
// otherwise format the code and hash both label values, under the
// vector's lock, at every request. The codes are net/http's, 100 to 999,
// so what is kept is bounded.
func (m *metrics) requestCounters(route string) func(code int) prometheus.Counter {
	var kept sync.Map // int → prometheus.Counter
	return func(code int) prometheus.Counter {
		if c, ok := kept.Load(code); ok {
			return c.(prometheus.Counter)
		}
		c, _ := kept.LoadOrStore(code, m.requests.WithLabelValues(route, strconv.Itoa(code)))
		return c.(prometheus.Counter)
	}
}
