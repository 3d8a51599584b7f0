package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"sync"
	"time"
)

// Defaults of Options.
var (
	// DefaultBackoff is the wait before each retry; the last one repeats.
	DefaultBackoff = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 10 * time.Second}
	// DefaultHeartbeatInterval is the time between heartbeats, and from
	// the start of an execution to its first.
	DefaultHeartbeatInterval = 5 * time.Second
	// DefaultAttemptTimeout bounds one call.
	DefaultAttemptTimeout = 5 * time.Second
	// DefaultMaxSpool and DefaultMaxSpoolBytes bound the results waiting
	// for delivery.
	DefaultMaxSpool      = 1000
	DefaultMaxSpoolBytes = int64(256 << 20)
)

// Kinds of call, as Options.Observe receives them.
const (
	KindResult    = "result"
	KindHeartbeat = "heartbeat"
	KindReady     = "ready"
	KindExited    = "exited"
)

// Options configures a Reporter.
type Options struct {
	// URL is the control plane's base URL (CONTROL_PLANE_URL).
	URL string
	// Token is sent as "Authorization: Bearer" (INTERNAL_API_TOKEN).
	Token string
	// ContainerID names this executor in the container callbacks.
	ContainerID string
	// PodName is the Kubernetes pod, or empty (then null in the bodies).
	PodName string
	// ResultsDir keeps the results not yet delivered; it is created.
	ResultsDir string
	// HTTPClient makes the calls; nil means a client of its own.
	HTTPClient *http.Client
	// Logger receives the reporter's logs; nil discards them.
	Logger *slog.Logger
	// Backoff is the wait before each retry of a result, ready or exited
	// call; the last repeats. Empty means DefaultBackoff.
	Backoff []time.Duration
	// HeartbeatInterval is the time between heartbeats; zero means
	// DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// AttemptTimeout bounds one call; zero means DefaultAttemptTimeout.
	AttemptTimeout time.Duration
	// MaxSpool and MaxSpoolBytes bound the results waiting for delivery
	// (each held in memory and in ResultsDir): past either, Full is true
	// and the server takes no new execution until some are delivered.
	// Zero means DefaultMaxSpool and DefaultMaxSpoolBytes.
	MaxSpool      int
	MaxSpoolBytes int64
	// Observe, when set, is called after every call with its kind, how
	// long it took and its error (nil when the control plane took it).
	Observe func(kind string, took time.Duration, err error)
}

// StatusError is a call the control plane answered with a status other
// than 2xx.
type StatusError struct {
	// Code is the HTTP status code.
	Code int
}

// Error names the status.
func (e *StatusError) Error() string {
	return fmt.Sprintf("control plane answered %d %s", e.Code, http.StatusText(e.Code))
}

// Reporter sends an executor's callbacks. It is safe for concurrent use.
type Reporter struct {
	base           *url.URL
	token          string
	containerID    string
	podName        string
	dir            string
	client         *http.Client
	log            *slog.Logger
	backoff        []time.Duration
	heartbeat      time.Duration
	attemptTimeout time.Duration
	observe        func(string, time.Duration, error)

	// ctx ends the background work at Close.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// results stores and delivers the results.
	results *Outbox
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// New checks opts and makes the results directory. It starts nothing:
// call Start to re-send what an earlier process left.
func New(opts Options) (*Reporter, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("control plane URL %q is not an http(s) URL", opts.URL)
	}
	if opts.ResultsDir == "" || !filepath.IsAbs(opts.ResultsDir) {
		return nil, fmt.Errorf("results directory %q is not an absolute path", opts.ResultsDir)
	}
	r := &Reporter{
		base:           u,
		token:          opts.Token,
		containerID:    opts.ContainerID,
		podName:        opts.PodName,
		dir:            opts.ResultsDir,
		client:         opts.HTTPClient,
		log:            opts.Logger,
		backoff:        opts.Backoff,
		heartbeat:      opts.HeartbeatInterval,
		attemptTimeout: opts.AttemptTimeout,
		observe:        opts.Observe,
	}
	if r.client == nil {
		r.client = &http.Client{}
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if len(r.backoff) == 0 {
		r.backoff = DefaultBackoff
	}
	if r.heartbeat <= 0 {
		r.heartbeat = DefaultHeartbeatInterval
	}
	if r.attemptTimeout <= 0 {
		r.attemptTimeout = DefaultAttemptTimeout
	}
	if r.observe == nil {
		r.observe = func(string, time.Duration, error) {}
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	results, err := NewOutbox(OutboxOptions{
		Dir:  opts.ResultsDir,
		Send: r.sendResult,
		// The reporter's own backoff, so that the two never differ.
		Backoff:   r.backoff,
		MaxItems:  opts.MaxSpool,
		MaxBytes:  opts.MaxSpoolBytes,
		Logger:    r.log,
		IDKey:     "execution_id",
		Kind:      KindResult,
		OnFailure: func(id string, attempt int, err error) { r.logFailure(KindResult, id, attempt, err) },
	})
	if err != nil {
		r.cancel()
		return nil, fmt.Errorf("results directory: %w", err)
	}
	r.results = results
	return r, nil
}

// Start re-sends, in the background, every result an earlier process left
// in the results directory. It returns how many it found.
func (r *Reporter) Start() int {
	n := r.results.Start()
	if n > 0 {
		r.log.Info("re-sending stored results", "event", "spool_resend", "count", n)
	}
	return n
}

// Result reports an execution's result (the /execute result object) in the
// background: it is stored first, then POSTed to
// /internal/executions/{id}/result until delivered. It never blocks on
// the network.
func (r *Reporter) Result(executionID string, result any) error {
	if !idPattern.MatchString(executionID) {
		return fmt.Errorf("execution id %q is not valid", executionID)
	}
	body, err := json.Marshal(result)
	if err != nil {
		return fmt.Errorf("unable to encode the result: %w", err)
	}
	return r.results.Put(executionID, body)
}

// sendResult is one delivery attempt of a result.
func (r *Reporter) sendResult(ctx context.Context, id string, body []byte) error {
	return r.post(ctx, KindResult, "/internal/executions/"+url.PathEscape(id)+"/result", body)
}

// wait sleeps before retry number attempt+1; false when the reporter
// closed meanwhile.
func (r *Reporter) wait(attempt int) bool {
	return sleep(r.ctx, r.backoff[min(attempt, len(r.backoff)-1)])
}

// logFailure logs a failed call; a 401 is an authentication failure.
func (r *Reporter) logFailure(kind, id string, attempt int, err error) {
	attrs := []any{"event", kind + "_failed", "attempt", attempt + 1, "error", err}
	if id != "" {
		attrs = append(attrs, "execution_id", id)
	}
	var se *StatusError
	if errors.As(err, &se) && se.Code == http.StatusUnauthorized {
		r.log.Error("control plane authentication failed: check INTERNAL_API_TOKEN; retrying", append(attrs, "event", "auth_failed")...)
		return
	}
	if r.ctx.Err() != nil {
		return
	}
	r.log.Warn("control plane call failed; retrying", attrs...)
}

// post makes one call. 2xx is success; 409 on a result means the control
// plane already has it, which is success too.
func (r *Reporter) post(ctx context.Context, kind, path string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, r.attemptTimeout)
	defer cancel()
	start := time.Now()
	err := r.do(ctx, kind, path, body)
	r.observe(kind, time.Since(start), err)
	return err
}

func (r *Reporter) do(ctx context.Context, kind, path string, body []byte) error {
	u := r.base.JoinPath(path)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("unable to build the %s call: %w", kind, err)
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "coderunner-executor")
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("unable to reach the control plane: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusConflict && kind == KindResult:
		return nil
	}
	return &StatusError{Code: resp.StatusCode}
}

// Heartbeat sends a heartbeat for the execution every HeartbeatInterval,
// the first one an interval after the call, until stop is called. stop
// returns once no heartbeat is in flight, so that none follows the result
// a caller reports after it. A failed heartbeat is logged and not retried:
// the next one is due soon.
func (r *Reporter) Heartbeat(executionID string) (stop func()) {
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	path := "/internal/executions/" + url.PathEscape(executionID) + "/heartbeat"
	go func() {
		defer close(done)
		t := time.NewTicker(r.heartbeat)
		defer t.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				body, _ := json.Marshal(map[string]any{
					"timestamp":    now.UTC().Format(time.RFC3339Nano),
					"execution_id": executionID,
					"container_id": r.containerID,
					"sequence":     n + 1,
				})
				if err := r.post(ctx, KindHeartbeat, path, body); err != nil && ctx.Err() == nil {
					r.logFailure(KindHeartbeat, executionID, n, err)
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(cancel)
		<-done
	}
}

// podName is the pod name, or nil for JSON null.
func (r *Reporter) podNameValue() any {
	if r.podName == "" {
		return nil
	}
	return r.podName
}

// Ready reports, in the background, that the executor listens on port;
// it is retried until delivered or the reporter closes.
func (r *Reporter) Ready(port int) {
	body, _ := json.Marshal(map[string]any{
		"container_id":  r.containerID,
		"pod_name":      r.podNameValue(),
		"executor_port": port,
		"ready_at":      time.Now().UTC().Format(time.RFC3339Nano),
	})
	path := "/internal/containers/" + url.PathEscape(r.containerID) + "/ready"
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for attempt := 0; ; attempt++ {
			err := r.post(r.ctx, KindReady, path, body)
			if err == nil {
				r.log.Info("ready reported", "event", "container_ready", "port", port)
				return
			}
			r.logFailure(KindReady, "", attempt, err)
			if !r.wait(attempt) {
				return
			}
		}
	}()
}

// Exited reports that the executor stops, with its exit code and reason
// ("sigterm", "sigint", "error"), retrying until it is delivered or ctx
// ends. It is the last call: it does not wait for other work.
func (r *Reporter) Exited(ctx context.Context, exitCode int, reason string) error {
	body, _ := json.Marshal(map[string]any{
		"container_id": r.containerID,
		"pod_name":     r.podNameValue(),
		"exit_code":    exitCode,
		"exit_reason":  reason,
		"exited_at":    time.Now().UTC().Format(time.RFC3339Nano),
	})
	path := "/internal/containers/" + url.PathEscape(r.containerID) + "/exited"
	for attempt := 0; ; attempt++ {
		err := r.post(ctx, KindExited, path, body)
		if err == nil {
			r.log.Info("exit reported", "event", "container_exited", "exit_code", exitCode, "exit_reason", reason)
			return nil
		}
		r.logFailure(KindExited, "", attempt, err)
		t := time.NewTimer(min(r.backoff[min(attempt, len(r.backoff)-1)], 250*time.Millisecond))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("unable to report the exit: %w", err)
		}
	}
}

// Spool is the number and size of the results not yet delivered.
func (r *Reporter) Spool() (results int, bytes int64) { return r.results.Spool() }

// SpoolFull is true when the results not yet delivered reach MaxSpool or
// MaxSpoolBytes: the caller must not start executions that would add
// more. Results handed over all the same are still kept and sent, so the
// spool holds at most the bound plus the executions already started.
func (r *Reporter) SpoolFull() bool { return r.results.Full() }

// Pending is the number of results not yet delivered.
func (r *Reporter) Pending() int {
	n, _ := r.results.Spool()
	return n
}

// Flush waits until every result is delivered or ctx ends; undelivered
// results stay stored for the next start.
func (r *Reporter) Flush(ctx context.Context) error {
	if err := r.results.Flush(ctx); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// Close stops every retry and heartbeat and waits for them. Results not
// delivered stay in the results directory. Close is safe to call twice.
func (r *Reporter) Close() error {
	r.cancel()
	err := r.results.Close()
	r.wg.Wait()
	return err
}
