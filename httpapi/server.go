package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/httpguard"
	"github.com/coderunner/coderunner/invoke"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/session"
)

// Executor runs /execute executions; *invoke.Invoker is one.
type Executor interface {
	Run(ctx context.Context, req invoke.Request) *invoke.Result
}

// Runner runs /v1/run executions; *execute.Executor is one.
type Runner interface {
	Execute(ctx context.Context, req execute.Request) (*execute.Result, error)
}

// Judge judges /v1/judge requests; *judge.Judge is one.
type Judge interface {
	Execute(ctx context.Context, req judge.ExecutionRequest) judge.ExecutionResult
}

// Sessions shows and ends sessions; *session.Store is one. The session
// is the one of the caller's credential (session.Owner of ctx).
type Sessions interface {
	DeleteContext(ctx context.Context, id string) error
	Info(ctx context.Context, id string) (session.Info, error)
	List(ctx context.Context) []session.Info
	// MaxIdleTimeout is the longest session_ttl_seconds a request may
	// give.
	MaxIdleTimeout() time.Duration
}

// Reporter sends the control plane callbacks; *controlplane.Reporter is
// one.
type Reporter interface {
	Start() int
	Ready(port int)
	Heartbeat(executionID string) (stop func())
	Result(executionID string, result any) error
	Flush(ctx context.Context) error
	Exited(ctx context.Context, exitCode int, reason string) error
	Close() error
}

// Defaults of Options.
const (
	DefaultMaxBodyBytes      = 8 << 20
	DefaultShutdownGrace     = 2 * time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 60 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	// minQueue is the least number of waiting requests the queue holds
	// by default (at least ten must wait; 64 absorbs a burst of
	// fifty clients on a small machine).
	minQueue = 64
	// queuePerSlot is the default number of waiting requests per running
	// slot: a waiting request costs the server tens of KiB (a goroutine
	// and its decoded body), a running one a whole sandbox.
	queuePerSlot = 16
)

// Options configures a Server. Executor is required; a nil Runner or Judge
// answers its endpoint with 503.
type Options struct {
	Executor Executor
	Runner   Runner
	Judge    Judge
	// Sessions, when set, serves the session endpoints (and, when it is
	// a SessionFiles, the files endpoints); nil answers them 404, as no
	// session exists. Runner is what runs requests that
	// name a session (session.Store.Wrap).
	Sessions Sessions
	// Languages are the language identifiers /v1/languages lists, for
	// the playground page's choice.
	Languages []string
	// MCP, when set, builds the handler of /mcp (MCP streamable HTTP)
	// from run, which is Runner behind the server's running slots and
	// queue, so that MCP calls share them with /v1/run. Nil leaves /mcp
	// unanswered (404).
	MCP func(run Runner) (http.Handler, error)
	// Reporter, when set, receives the control plane callbacks.
	Reporter Reporter
	// Logger receives JSON logs; nil discards them.
	Logger *slog.Logger
	// APIToken, when set, is required as "Authorization: Bearer" on the
	// execution endpoints.
	APIToken string
	// APITokens are further tokens, one per client, accepted like
	// APIToken. Each token is its own owner of sessions: a session_id
	// names a different session for each. In logs and metrics they are
	// named api_token, api_token_2, … in order.
	APITokens []string
	// APIKeys are named keys, each its own owner of sessions with its own
	// limits, accepted beside the tokens.
	APIKeys []APIKey
	// AllowedHosts are further names of the server, besides localhost and
	// the loopback addresses, that the Host and Origin headers may carry
	// (httpguard.Hosts). Every route refuses other names with 403 when the
	// server listens on a loopback address, or when this list is set.
	AllowedHosts []string
	// MaxConcurrent is the number of executions running at once; zero
	// means the number of CPUs.
	MaxConcurrent int
	// QueueSize is the number of executions that may wait; zero means
	// max(64, 16 × MaxConcurrent).
	QueueSize int
	// MaxBodyBytes caps a request body; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// ShutdownGrace is the time from the end of Serve's context to the
	// exited callback; zero means DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// ReadHeaderTimeout bounds the reading of request headers; zero means
	// DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the reading of a request's body, from the end of
	// its headers; zero means DefaultReadTimeout. A body not received in
	// time is answered 408 and its connection closed. It is a deadline of
	// each request, not http.Server.ReadTimeout, which would also cancel
	// the requests that run longer than it once their body is read.
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of an answer to the client; zero
	// means DefaultWriteTimeout. It is renewed at every write, so that it
	// cuts a client that stops reading but never a long run or event
	// stream (http.Server.WriteTimeout would bound the whole request).
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no request for
	// this long; zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Backend and Version are shown by /health.
	Backend, Version string
	// Registry receives the metrics; nil means a registry of the server's
	// own. /metrics serves it.
	Registry *prometheus.Registry
	// Submissions configures asynchronous judge submissions (a
	// callback_url); without a Secret they are off.
	Submissions SubmissionOptions
}

// ExitStatus is the cause of a shutdown: give it to the cancellation of
// Serve's context (context.WithCancelCause) to say how the process ends.
type ExitStatus struct {
	// Code is the exit status the process ends with (143 for SIGTERM).
	Code int
	// Reason is the exited callback's exit_reason ("sigterm").
	Reason string
}

// Error describes the shutdown.
func (e *ExitStatus) Error() string { return fmt.Sprintf("shutdown (%s, exit %d)", e.Reason, e.Code) }

// The causes of the usual shutdowns.
var (
	ExitSIGTERM = &ExitStatus{Code: 143, Reason: "sigterm"}
	ExitSIGINT  = &ExitStatus{Code: 130, Reason: "sigint"}
	ExitNormal  = &ExitStatus{Code: 0, Reason: "shutdown"}
)

// state is where the server is in its life.
type state int

const (
	stateStarting state = iota
	stateReady
	stateDraining
)

func (s state) String() string {
	return [...]string{"starting", "ok", "draining"}[s]
}

// Server is the HTTP service. Build it with New, run it with Serve.
type Server struct {
	exec     Executor
	runner   Runner
	judge    Judge
	sessions Sessions
	mcp      http.Handler
	// languages is what /v1/languages lists.
	languages []string
	rep       Reporter
	spool     *spoolGate   // nil without a bounded spool
	subs      *submissions // nil when asynchronous submissions are off
	log       *slog.Logger
	// clients are the credentials accepted; none means no
	// Authorization is required.
	clients []*client
	hosts   httpguard.Hosts
	maxBody int64
	grace   time.Duration
	rht     time.Duration
	rt, wt  time.Duration
	idle    time.Duration
	backend string
	version string
	slots   int
	queue   int
	// heartbeat is the silence after which an event stream gets a
	// keep-alive comment (DefaultHeartbeat).
	heartbeat time.Duration

	gate     *gate
	metrics  *metrics
	registry *prometheus.Registry
	handler  http.Handler

	// runCtx is the context of every execution; it ends, with
	// invoke.ErrShutdown as cause, when the server drains.
	runCtx   context.Context
	stopRuns context.CancelCauseFunc

	mu       sync.Mutex
	state    state
	inflight sync.WaitGroup
}

// New builds a Server.
func New(opts Options) (*Server, error) {
	if opts.Executor == nil {
		return nil, errors.New("httpapi: no executor")
	}
	s := &Server{
		exec:      opts.Executor,
		runner:    opts.Runner,
		judge:     opts.Judge,
		sessions:  opts.Sessions,
		languages: append([]string(nil), opts.Languages...),
		rep:       opts.Reporter,
		log:       opts.Logger,
		maxBody:   opts.MaxBodyBytes,
		grace:     opts.ShutdownGrace,
		rht:       opts.ReadHeaderTimeout,
		rt:        opts.ReadTimeout,
		wt:        opts.WriteTimeout,
		idle:      opts.IdleTimeout,
		backend:   opts.Backend,
		version:   opts.Version,
		slots:     opts.MaxConcurrent,
		queue:     opts.QueueSize,
		registry:  opts.Registry,
		hosts:     httpguard.Hosts{Allowed: opts.AllowedHosts},

		heartbeat: DefaultHeartbeat,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.grace <= 0 {
		s.grace = DefaultShutdownGrace
	}
	if s.rht <= 0 {
		s.rht = DefaultReadHeaderTimeout
	}
	if s.rt <= 0 {
		s.rt = DefaultReadTimeout
	}
	if s.wt <= 0 {
		s.wt = DefaultWriteTimeout
	}
	if s.idle <= 0 {
		s.idle = DefaultIdleTimeout
	}
	if s.slots <= 0 {
		s.slots = runtime.NumCPU()
	}
	if s.queue <= 0 {
		s.queue = max(minQueue, queuePerSlot*s.slots)
	}
	if s.registry == nil {
		s.registry = prometheus.NewRegistry()
	}
	s.metrics = newMetrics(s.registry)
	var err error
	if s.clients, err = newClients(opts, s.metrics); err != nil {
		return nil, err
	}
	s.spool = newSpoolGate(s.rep, s.registry)
	s.gate = newGate(s.slots, s.queue, func(running, waiting int) {
		s.metrics.active.Set(float64(running))
		s.metrics.queued.Set(float64(waiting))
	})
	s.runCtx, s.stopRuns = context.WithCancelCause(context.Background())
	if s.subs, err = newSubmissions(s, opts.Submissions); err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	if opts.MCP != nil {
		if opts.Runner == nil {
			return nil, errors.New("httpapi: MCP needs a Runner")
		}
		h, err := opts.MCP(slotRunner{s})
		if err != nil {
			return nil, fmt.Errorf("httpapi: unable to build the MCP handler: %w", err)
		}
		s.mcp = h
	}
	s.handler = s.routes()
	return s, nil
}

// ObserveReport records one control plane call in the metrics; pass it as
// the reporter's Options.Observe.
func (s *Server) ObserveReport(kind string, took time.Duration, err error) {
	s.metrics.observeReport(kind, took, err)
}

// Handler is the server's HTTP handler, for tests and embedding. It
// answers /health with 503 until SetReady or Serve.
func (s *Server) Handler() http.Handler { return s.handler }

// SetReady makes the server take executions; Serve calls it once
// listening.
func (s *Server) SetReady() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateStarting {
		s.state = stateReady
	}
}

// route is one endpoint.
type route struct {
	method, path string
	handler      http.HandlerFunc
	// open endpoints need no API token.
	open bool
	// json endpoints take a JSON body.
	json bool
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	rs := []route{
		{http.MethodPost, "/execute", s.handleExecute, false, true},
		{http.MethodPost, "/v1/run", s.handleRun, false, true},
		{http.MethodGet, "/v1/run/ws", s.handleRunWS, false, false},
		{http.MethodPost, "/v1/judge", s.handleJudge, false, true},
		// Every method, answering the others itself: a GET pattern
		// would clash with the method-less 405 pattern of
		// /v1/judge/batch.
		{"", "/v1/judge/{id}", s.handleSubmission, false, false},
		{http.MethodPost, "/v1/judge/batch", s.requireNDJSON(http.HandlerFunc(s.handleJudgeBatch)).ServeHTTP, false, false},
		{http.MethodGet, "/v1/sessions", s.handleListSessions, false, false},
		{http.MethodGet, "/v1/sessions/{id}", s.handleGetSession, false, false},
		{http.MethodDelete, "/v1/sessions/{id}", s.handleDeleteSession, false, false},
		{http.MethodPost, "/v1/sessions/{id}/restart", s.handleRestartSession, false, false},
		{http.MethodGet, "/v1/sessions/{id}/files", s.handleListFiles, false, false},
		{http.MethodGet, "/v1/sessions/{id}/files/{path...}", s.handleGetFile, false, false},
		{http.MethodPut, "/v1/sessions/{id}/files/{path...}", s.handlePutFile, false, false},
		{http.MethodDelete, "/v1/sessions/{id}/files/{path...}", s.handleDeleteFile, false, false},
		{http.MethodGet, "/health", s.handleHealth, true, false},
		{http.MethodGet, "/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}).ServeHTTP, true, false},
		{http.MethodGet, "/openapi.yaml", handleOpenAPI, true, false},
		{http.MethodGet, "/v1/languages", s.handleLanguages, false, false},
		// The playground: the page is open, as it asks for the token
		// itself; it still answers only the server's own names.
		{http.MethodGet, "/{$}", playgroundAsset("index.html", "text/html; charset=utf-8"), true, false},
		{http.MethodGet, "/playground.js", playgroundAsset("playground.js", "text/javascript; charset=utf-8"), true, false},
		{http.MethodGet, "/playground.css", playgroundAsset("playground.css", "text/css; charset=utf-8"), true, false},
	}
	if s.mcp != nil {
		// Every method: the transport uses POST, GET and DELETE, and
		// answers the others itself (its own Content-Type check
		// included).
		rs = append(rs, route{"", "/mcp", s.handleMCP, false, false})
	}
	// allowed lists each path's methods, in the order of rs, for the
	// 405 of the others.
	allowed := map[string][]string{}
	var paths []string
	for _, r := range rs {
		var h http.Handler = r.handler
		if r.json {
			h = s.requireJSON(h)
		}
		if !r.open {
			h = s.authorize(h)
		}
		h = s.guard(h)
		if r.method == "" {
			mux.Handle(r.path, s.observe(r.path, h))
			continue
		}
		mux.Handle(r.method+" "+r.path, s.observe(r.path, h))
		if allowed[r.path] == nil {
			paths = append(paths, r.path)
		}
		allowed[r.path] = append(allowed[r.path], r.method)
		if r.method == http.MethodGet {
			allowed[r.path] = append(allowed[r.path], http.MethodHead)
		}
	}
	// The path without a method is less specific: it gets the other
	// methods.
	for _, path := range paths {
		methods := strings.Join(allowed[path], ", ")
		mux.Handle(path, s.observe(path, s.guard(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Allow", methods)
			writeError(w, req, http.StatusMethodNotAllowed, CodeMethodNotAllowed,
				fmt.Sprintf("%s %s is not allowed; use %s", req.Method, req.URL.Path, methods))
		}))))
	}
	// No guard: a 404 tells a page nothing.
	mux.Handle("/", s.observe("other", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no endpoint %s", r.URL.Path))
	})))
	return mux
}

// health is the /health body.
type health struct {
	Status           string `json:"status"`
	Backend          string `json:"backend"`
	Version          string `json:"version"`
	ActiveExecutions int    `json:"active_executions"`
	QueuedExecutions int    `json:"queued_executions"`
	Slots            int    `json:"slots"`
	QueueSize        int    `json:"queue_size"`
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	st := s.state
	s.mu.Unlock()
	running, waiting := s.gate.counts()
	code := http.StatusOK
	if st != stateReady {
		code = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterQueueSeconds))
	}
	writeJSON(w, code, health{Status: st.String(), Backend: s.backend, Version: s.version,
		ActiveExecutions: running, QueuedExecutions: waiting, Slots: s.slots, QueueSize: s.queue})
}

// admit counts an execution request in, unless the server does not take
// executions now. done must be called when the request is answered.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (done func(), ok bool) {
	switch s.countIn() {
	case stateReady:
		return s.inflight.Done, true
	case stateDraining:
		writeError(w, r, http.StatusServiceUnavailable, CodeShuttingDown, "the executor is shutting down")
	default:
		writeError(w, r, http.StatusServiceUnavailable, CodeUnavailable, "the executor is starting")
	}
	return nil, false
}

// countIn counts a request in flight when the server takes executions
// (the shutdown waits for it), and returns the state it found.
func (s *Server) countIn() state {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateReady {
		s.inflight.Add(1)
	}
	return s.state
}

// queueFull answers a request that found no room; enter counted it.
func (s *Server) queueFull(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, http.StatusServiceUnavailable, CodeQueueFull,
		fmt.Sprintf("all %d running slots are busy and %d requests are waiting; retry later", s.slots, s.queue))
}

// Serve answers on ln until ctx ends, then shuts down as the cause of ctx
// says (an *ExitStatus; ExitNormal otherwise) and returns that status.
// The returned error is a failure of the listener.
//
// Without an API token it refuses to serve on a listener that is not
// loopback, or with a Reporter: a token is what keeps strangers from
// running code, and from making the control plane believe their results.
func (s *Server) Serve(ctx context.Context, ln net.Listener) (*ExitStatus, error) {
	if len(s.clients) == 0 {
		switch {
		case s.rep != nil:
			return ExitNormal, errors.New("httpapi: a control plane is configured and no API token is set")
		case !httpguard.IsLoopback(ln.Addr().String()):
			return ExitNormal, fmt.Errorf("httpapi: %s is not a loopback address and no API token is set", ln.Addr())
		}
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.rht,
		// No ReadTimeout or WriteTimeout: those bound the whole request,
		// and would cut runs, judges and MCP event streams longer than
		// them. observe sets the body's read deadline and renews the
		// write deadline at every write instead.
		IdleTimeout:    s.idle,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	if s.rep != nil {
		if n := s.rep.Start(); n > 0 {
			s.log.Info("re-sending results of an earlier run", "event", "spool_resend", "count", n)
		}
	}
	s.subs.start()
	s.SetReady()
	port := 0
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		port = a.Port
	}
	s.log.Info("listening", "event", "ready", "addr", ln.Addr().String(), "backend", s.backend)
	if s.rep != nil {
		s.rep.Ready(port)
	}

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
		s.log.Error("the listener failed", "event", "listener_failed", "error", serveErr)
	}
	status := ExitNormal
	var es *ExitStatus
	if errors.As(context.Cause(ctx), &es) {
		status = es
	} else if serveErr != nil {
		status = &ExitStatus{Code: 1, Reason: "error"}
	}
	s.shutdown(srv, status)
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return status, fmt.Errorf("unable to serve: %w", serveErr)
	}
	return status, nil
}

// shutdown drains within the grace period: refuse new work, stop the
// executions (reported crashed), give the results the time left to reach
// the control plane, report the exit, close.
func (s *Server) shutdown(srv *http.Server, status *ExitStatus) {
	start := time.Now()
	deadline := start.Add(s.grace)
	s.log.Info("shutting down", "event", "shutdown", "exit_reason", status.Reason, "grace_ms", s.grace.Milliseconds())
	s.mu.Lock()
	s.state = stateDraining
	s.mu.Unlock()
	s.stopRuns(invoke.ErrShutdown)

	// The handlers answer and report as soon as the sandbox killed their
	// programs; leave a part of the grace for delivery and the exit.
	waitTimeout(&s.inflight, time.Until(start.Add(s.grace*2/5)))
	// Callbacks are delivered meanwhile, within the same part of the
	// grace as the control plane's results.
	callbacks := s.subs.drain(start.Add(s.grace * 7 / 10))
	if s.rep != nil {
		ctx, cancel := context.WithDeadline(context.Background(), start.Add(s.grace*7/10))
		if err := s.rep.Flush(ctx); err != nil {
			s.log.Warn("results left for the next start", "event", "results_spooled", "error", err)
		}
		cancel()
		ctx, cancel = context.WithDeadline(context.Background(), deadline.Add(-s.grace/20))
		if err := s.rep.Exited(ctx, status.Code, status.Reason); err != nil {
			s.log.Error("unable to report the exit", "event", "exited_failed", "error", err)
		}
		cancel()
		if err := s.rep.Close(); err != nil {
			s.log.Warn("unable to close the reporter", "error", err)
		}
	}
	<-callbacks
	ctx, cancel := context.WithTimeout(context.Background(), max(time.Until(deadline), 50*time.Millisecond))
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
	s.log.Info("stopped", "event", "stopped", "exit_code", status.Code, "took_ms", time.Since(start).Milliseconds())
}

// waitTimeout waits for wg at most d.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
