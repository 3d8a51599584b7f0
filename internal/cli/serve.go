package cli

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/coderunner/coderunner/controlplane"
	"github.com/coderunner/coderunner/httpapi"
	"github.com/coderunner/coderunner/internal/assembly"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/internal/httpguard"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/mcpserver"
)

const serveAbout = `Serve the HTTP API: POST /execute (reported to the control plane),
POST /v1/run (with session_id), GET /v1/sessions, GET and DELETE
/v1/sessions/{id}, POST /v1/judge, GET /v1/judge/{id}, /mcp (MCP streamable HTTP),
GET /v1/languages, GET /health, GET /metrics and GET /openapi.yaml, and
at GET / the playground, a web page to run and judge code. Logs are JSON
lines on stderr.

Environment: CODERUNNER_API_TOKEN (require "Authorization: Bearer" on every
endpoint but /health, /metrics, /openapi.yaml and the playground's page,
which asks for the token itself; several separated by
commas, each with its own sessions; required, or serve refuses to start,
when --addr is not loopback or CONTROL_PLANE_URL is set, unless API keys
are configured: server.api_keys or CODERUNNER_SERVER_API_KEYS_FILE, each
key named in logs and metrics, with its own sessions and optional limits
on requests per second, concurrent executions and sessions; coderunner
keyhash makes their digests),
CONTROL_PLANE_URL and INTERNAL_API_TOKEN (report results,
heartbeats, ready and exited), CONTAINER_ID (default: the host name),
POD_NAME, RESULTS_DIR (undelivered results, default /tmp/results), and
every CODERUNNER_* configuration variable.

Asynchronous judging: with CODERUNNER_SERVER_CALLBACK_SECRET set, POST
/v1/judge with "callback_url" answers 202 with a submission id, judges in
the same slots and queue, and POSTs the result to the URL signed
(X-Coderunner-Signature: t=<unix>,v1=<HMAC-SHA256 of "t.body">), retried
1 s, 2 s, 4 s, then every 10 s and kept in RESULTS_DIR/callbacks
(server.callback_spool_dir) until delivered; GET /v1/judge/{id} shows it
(server.submission_ttl). Loopback, private and link-local destinations
are refused unless server.callback_allowed_hosts names them.

On SIGTERM it stops taking requests, reports running executions as crashed,
sends the exited callback within 2 s and exits 143 (130 on SIGINT). It
exits 1 when no sandbox backend works here, the work directory or RESULTS_DIR
is not writable, or the address cannot be bound.

Requests whose Host or Origin is not this server's are refused (403;
further names in server.allowed_hosts), JSON bodies must be sent as
application/json (415), and a body slower than server.read_timeout is cut
(408).`

// warmSandboxes is how many sandboxes the server keeps started ahead of
// need, for backends that can.
const warmSandboxes = 2

func (a *App) serveCmd(ctx context.Context, args []string) int {
	fs, c := a.flagSet("serve", "", serveAbout, true)
	var addr string
	fs.StringVar(&addr, "addr", "", "listen address `HOST:PORT` (default: server.addr of the configuration, 127.0.0.1:8080)")
	var slots, queue int
	fs.IntVar(&slots, "max-concurrent", 0, "running slots: executions at once, `N` sandboxes (default: server.max_concurrent, else one per CPU)")
	fs.IntVar(&queue, "queue-size", 0, "requests that may wait for a slot, `N` (default: server.queue_size, else max(64, 16 × slots)); more get 503 with Retry-After")
	pos, code, done := a.parse(fs, c, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return a.fail("serve", "no arguments expected, got %s", strings.Join(pos, " "))
	}
	cfg, log, err := a.setup(fs, c)
	if err != nil {
		return a.fail("serve", "%v", err)
	}
	if !isSet(fs, "log-level") {
		// A service logs at the configuration's level (info by default),
		// not at the quiet level of the one-shot commands.
		var level slog.Level
		if level.UnmarshalText([]byte(cfg.Server.LogLevel)) == nil {
			log = slog.New(slog.NewJSONHandler(a.Stderr, &slog.HandlerOptions{Level: level}))
		}
	}
	if addr, err = serveFlags(fs, cfg, addr, slots, queue); err != nil {
		return a.fail("serve", "%v", err)
	}
	langs, err := cfg.LanguageTable()
	if err != nil {
		return a.fail("serve", "--config: %v", err)
	}

	containerID := cfg.ControlPlane.ContainerID
	if containerID == "" {
		containerID, _ = os.Hostname()
	}
	log = log.With("container_id", containerID)

	parts, ok := a.serveParts(ctx, c, cfg, langs, log)
	if !ok {
		return ExitFailure
	}
	// Closed after Serve returns, when no call uses a session any more:
	// every session's files go with the server, then the backend.
	defer parts.Close()
	srvOpts := a.serverOptions(cfg, parts, log)

	// The reporter's metrics go to the server, built after it.
	var srv *httpapi.Server
	if cfg.ControlPlane.URL != "" {
		rep, err := newReporter(cfg, containerID, log, func(kind string, took time.Duration, err error) { srv.ObserveReport(kind, took, err) })
		if err != nil {
			log.Error("unable to set up control plane reporting", "event", "startup_failed", "error", err)
			return ExitFailure
		}
		srvOpts.Reporter = rep
	}
	srv, err = httpapi.New(srvOpts)
	if err != nil {
		log.Error("unable to build the server", "event", "startup_failed", "error", err)
		return ExitFailure
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Error("unable to listen", "event", "startup_failed", "addr", addr, "error", err)
		return ExitFailure
	}

	sctx, stop := shutdownContext(ctx)
	defer stop()
	status, err := srv.Serve(sctx, ln)
	if err != nil {
		log.Error("the server failed", "event", "server_failed", "error", err)
		return ExitFailure
	}
	return status.Code
}

// serveParts opens every part the server uses; ok is false, the reason
// logged, when one cannot start.
func (a *App) serveParts(ctx context.Context, c *common, cfg *config.Config, langs *lang.Table, log *slog.Logger) (*assembly.Parts, bool) {
	parts, err := assembly.Open(ctx, assembly.Options{
		Config: cfg, Logger: log, Registry: a.Registry, Backend: c.backend, Languages: langs, Warm: warmSandboxes,
		Invoker: true, Executor: true, Sessions: true, Engine: true, TmpSeeds: true,
	})
	var pe *assembly.Error
	switch {
	case errors.As(err, &pe) && pe.Part == assembly.PartBackend:
		log.Error("no sandbox backend works here", "event", "startup_failed", "backend", c.backend, "error", pe.Err)
		return nil, false
	case errors.As(err, &pe) && pe.Part == assembly.PartInvoker:
		log.Error("the work directory is not usable", "event", "startup_failed", "error", pe.Err)
		return nil, false
	case errors.As(err, &pe) && pe.Part == assembly.PartSessions:
		log.Error("unable to set up sessions", "event", "startup_failed", "error", pe.Err)
		return nil, false
	case err != nil:
		log.Error("unable to set up", "event", "startup_failed", "error", err)
		return nil, false
	}
	return parts, true
}

// serverOptions are the HTTP service's settings: the configuration's, and
// the parts that serve each endpoint.
func (a *App) serverOptions(cfg *config.Config, parts *assembly.Parts, log *slog.Logger) httpapi.Options {
	srvOpts := httpapi.Options{
		Executor: parts.Invoker,
		// A request that names a session is refused (ErrDisabled) when
		// sessions are off.
		Runner:            parts.Runner(),
		Languages:         parts.Languages.IDs(),
		Logger:            log,
		APITokens:         cfg.Server.APITokens(),
		APIKeys:           apiKeys(cfg.Server.Keys()),
		AllowedHosts:      cfg.Server.AllowedHostList(),
		MaxConcurrent:     cfg.Server.MaxConcurrent,
		QueueSize:         cfg.Server.QueueSize,
		MaxBodyBytes:      int64(cfg.Server.MaxBodyMB) << 20,
		ShutdownGrace:     cfg.Server.ShutdownTimeout.Std(),
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout.Std(),
		ReadTimeout:       cfg.Server.ReadTimeout.Std(),
		WriteTimeout:      cfg.Server.WriteTimeout.Std(),
		IdleTimeout:       cfg.Server.IdleTimeout.Std(),
		Backend:           parts.Backend.Name(),
		Version:           a.Version,
		Submissions: httpapi.SubmissionOptions{
			Secret:         []byte(cfg.Server.CallbackSecret),
			SpoolDir:       cfg.CallbackSpool(),
			AllowedHosts:   cfg.Server.CallbackAllowedHostList(),
			TTL:            cfg.Server.SubmissionTTL.Std(),
			Max:            cfg.Server.MaxSubmissions,
			MaxResultBytes: cfg.Server.CallbackMaxResultKB << 10,
			MaxAge:         cfg.Server.CallbackMaxAge.Std(),
			Timeout:        cfg.Server.CallbackTimeout.Std(),
			MaxSpool:       cfg.ControlPlane.MaxSpoolResults,
			MaxSpoolBytes:  int64(cfg.ControlPlane.MaxSpoolMB) << 20,
		},
	}
	if parts.Sessions != nil {
		srvOpts.Sessions = parts.Sessions
	}
	if parts.EngineErr != nil {
		log.Warn("/v1/judge is off: the judge engine could not start", "event", "judge_unavailable", "error", parts.EngineErr)
	} else {
		srvOpts.Judge = parts.Judge(parts.JudgeOptions())
	}
	srvOpts.MCP = func(slotted httpapi.Runner) (http.Handler, error) {
		mo := mcpserver.Options{
			Runner:       slotted,
			Languages:    parts.Languages,
			Engine:       parts.JudgeEngine(),
			EngineErr:    parts.EngineErr,
			JudgeOptions: parts.JudgeOptions(),
			Limits:       parts.DefaultLimits(),
			Version:      a.Version,
			Logger:       log,
		}
		if parts.Sessions != nil {
			// Not a nil *session.Store in the interface: no files
			// tools without sessions.
			mo.Files = parts.Sessions
		}
		ms, err := mcpserver.New(mo)
		if err != nil {
			return nil, err
		}
		return ms.NewHTTPHandler(mcpserver.HTTPOptions{AllowedHosts: cfg.Server.AllowedHostList()}), nil
	}

	return srvOpts
}

// serveFlags puts serve's flags over the configuration and checks the
// address (a token is needed off loopback); it returns the address.
func serveFlags(fs *flag.FlagSet, cfg *config.Config, addr string, slots, queue int) (string, error) {
	if addr == "" {
		addr = cfg.Server.Addr
	}
	if isSet(fs, "max-concurrent") {
		if slots < 1 || slots > config.MaxSlots {
			return "", fmt.Errorf("--max-concurrent: %d is out of range 1..%d", slots, config.MaxSlots)
		}
		cfg.Server.MaxConcurrent = slots
	}
	if isSet(fs, "queue-size") {
		if queue < 1 || queue > config.MaxQueue {
			return "", fmt.Errorf("--queue-size: %d is out of range 1..%d", queue, config.MaxQueue)
		}
		cfg.Server.QueueSize = queue
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", fmt.Errorf("--addr: %q is not host:port", addr)
	}
	if err := needToken(addr, cfg); err != nil {
		return "", err
	}
	return addr, nil
}

// needToken refuses to serve without an API token where a token is what
// keeps strangers out: on an address other machines can reach, and with a
// control plane, which believes every result /execute reports.
func needToken(addr string, cfg *config.Config) error {
	if cfg.Server.HasCredentials() {
		return nil
	}
	const set = "set CODERUNNER_API_TOKEN (server.api_token) to a long random secret, or give keys in server.api_keys"
	if cfg.ControlPlane.URL != "" {
		return fmt.Errorf("control_plane.url (CONTROL_PLANE_URL) is set, and without an API token anyone who reaches this service could make it report a result for any execution_id: %s", set)
	}
	if !httpguard.IsLoopback(addr) {
		return fmt.Errorf("--addr %s is not a loopback address, and without an API token anyone who reaches it could run code here: %s, or listen on 127.0.0.1", addr, set)
	}
	return nil
}

// apiKeys are the configuration's API keys as the server takes them. The
// digests were checked when the configuration was loaded.
func apiKeys(keys []config.APIKey) []httpapi.APIKey {
	out := make([]httpapi.APIKey, 0, len(keys))
	for _, k := range keys {
		hk := httpapi.APIKey{Name: k.Name, RequestsPerSecond: k.RequestsPerSecond, Burst: k.Burst,
			MaxConcurrent: k.MaxConcurrent, MaxSessions: k.MaxSessions}
		_, _ = hex.Decode(hk.SHA256[:], []byte(k.KeySHA256))
		out = append(out, hk)
	}
	return out
}

// newReporter builds the control plane reporter from the configuration.
func newReporter(cfg *config.Config, id string, log *slog.Logger, observe func(string, time.Duration, error)) (*controlplane.Reporter, error) {
	cp := cfg.ControlPlane
	if id == "" {
		return nil, fmt.Errorf("CONTAINER_ID is not set and the host name is unknown")
	}
	return controlplane.New(controlplane.Options{
		URL:               cp.URL,
		Token:             string(cp.Token),
		ContainerID:       id,
		PodName:           cp.PodName,
		ResultsDir:        cp.ResultsDir,
		Logger:            log,
		HeartbeatInterval: cp.HeartbeatInterval.Std(),
		MaxSpool:          cp.MaxSpoolResults,
		MaxSpoolBytes:     int64(cp.MaxSpoolMB) << 20,
		Observe:           observe,
	})
}

// shutdownContext ends when parent does or a SIGTERM or SIGINT arrives,
// with the matching httpapi.ExitStatus as its cause, so that the server
// reports the right exit reason and the process exits 143 or 130. main
// cancels parent on those signals too; the signal, delivered to both, says
// which it was.
func shutdownContext(parent context.Context) (context.Context, func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(exitFor(s))
		case <-parent.Done():
			select {
			case s := <-sigs:
				cancel(exitFor(s))
			case <-time.After(50 * time.Millisecond):
				cancel(causeOf(parent))
			}
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

func exitFor(s os.Signal) *httpapi.ExitStatus {
	if s == syscall.SIGTERM {
		return httpapi.ExitSIGTERM
	}
	return httpapi.ExitSIGINT
}

// causeOf keeps an *httpapi.ExitStatus given as parent's cause; any other
// end of parent is a normal shutdown.
func causeOf(parent context.Context) error {
	var es *httpapi.ExitStatus
	if errors.As(context.Cause(parent), &es) {
		return es
	}
	return httpapi.ExitNormal
}
