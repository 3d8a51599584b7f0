package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coderunner/coderunner/internal/egress"
)

// Validate reports the first invalid value, naming its key as the YAML
// file spells it, for example "limits.memory_mb: 0 is out of range
// 16..1024".
func (c *Config) Validate() error {
	checks := []func() error{
		c.Server.validate, c.Backend.validate, c.Docker.validate, c.Limits.validate,
		c.Security.validate, c.ControlPlane.validate, c.Sessions.validate,
		func() error {
			_, err := c.LanguageTable()
			return err
		},
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func intRange(key string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s: %d is out of range %d..%d", key, v, lo, hi)
	}
	return nil
}

func floatRange(key string, v, lo, hi float64) error {
	if !(v >= lo && v <= hi) { // also refuses NaN
		return fmt.Errorf("%s: %s is out of range %s..%s", key, fmtFloat(v), fmtFloat(lo), fmtFloat(hi))
	}
	return nil
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func durRange(key string, v Duration, lo, hi time.Duration) error {
	if v.Std() < lo || v.Std() > hi {
		return fmt.Errorf("%s: %v is out of range %v..%v", key, v, lo, hi)
	}
	return nil
}

func oneOf(key, v string, allowed ...string) error {
	if !slices.Contains(allowed, v) {
		return fmt.Errorf("%s: %q is not one of %s", key, v, strings.Join(allowed, ", "))
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) validate() error {
	host, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return fmt.Errorf("server.addr: %q is not host:port", s.Addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("server.addr: %q has no valid port", s.Addr)
	}
	_ = host // empty means every interface, which is the operator's choice
	return firstErr(
		intRange("server.max_concurrent", s.MaxConcurrent, 0, MaxSlots),
		intRange("server.queue_size", s.QueueSize, 0, MaxQueue),
		intRange("server.max_body_mb", s.MaxBodyMB, 1, 1024),
		durRange("server.read_header_timeout", s.ReadHeaderTimeout, time.Second, time.Minute),
		durRange("server.shutdown_timeout", s.ShutdownTimeout, 0, 10*time.Minute),
		oneOf("server.log_level", s.LogLevel, "debug", "info", "warn", "error"),
		s.validateWeb(),
	)
}

// validateWeb checks the keys of the web-facing defences.
func (s *Server) validateWeb() error {
	for _, h := range s.AllowedHostList() {
		if strings.ContainsAny(h, "/@ \t") || strings.Trim(h, "[]:") == "" {
			return fmt.Errorf("server.allowed_hosts: %q is not a host name or host:port", h)
		}
	}
	if s.APIToken != "" && len(s.APITokens()) == 0 {
		return fmt.Errorf("server.api_token: holds no token (only commas and spaces)")
	}
	if err := s.validateKeys(); err != nil {
		return err
	}
	if err := s.validateCallbacks(); err != nil {
		return err
	}
	return firstErr(
		durRange("server.read_timeout", s.ReadTimeout, time.Second, time.Hour),
		durRange("server.write_timeout", s.WriteTimeout, time.Second, time.Hour),
		durRange("server.idle_timeout", s.IdleTimeout, time.Second, time.Hour),
	)
}

func (b *Backend) validate() error {
	if b.WorkDir != "" && !filepath.IsAbs(b.WorkDir) {
		return fmt.Errorf("backend.work_dir: %q is not an absolute path", b.WorkDir)
	}
	if b.BwrapPath != "" && !filepath.IsAbs(b.BwrapPath) {
		return fmt.Errorf("backend.bwrap_path: %q is not an absolute path", b.BwrapPath)
	}
	return firstErr(
		oneOf("backend.name", b.Name, "auto", "native", "bwrap", "docker"),
		intRange("backend.workspace_size_mb", b.WorkspaceSizeMB, 1, 16384),
		intRange("backend.tmp_size_mb", b.TmpSizeMB, 1, 16384),
		intRange("backend.open_files", b.OpenFiles, 16, 65536),
	)
}

func (d *Docker) validate() error {
	if err := oneOf("docker.pull_policy", d.PullPolicy, "always", "if_not_present", "never"); err != nil {
		return err
	}
	if err := intRange("docker.warm", d.Warm, 0, MaxDockerWarm); err != nil {
		return err
	}
	if d.Host != "" {
		u, err := url.Parse(d.Host)
		if err != nil || !slices.Contains([]string{"unix", "tcp", "http", "https"}, u.Scheme) {
			return fmt.Errorf("docker.host: %q is not a unix://, tcp:// or http(s):// address", d.Host)
		}
	}
	// Empty: a host uid of its own per container.
	user, _, _ := strings.Cut(d.User, ":")
	if d.User != "" && (user == "" || user == "0" || user == "root") {
		return fmt.Errorf("docker.user: %q must name a non-root user", d.User)
	}
	return nil
}

func (l *Limits) validate() error {
	return firstErr(
		intRange("limits.memory_mb", l.MemoryMB, 16, 1024),
		floatRange("limits.cpu_cores", l.CPUCores, 0.05, 64),
		intRange("limits.per_test_timeout_ms", l.PerTestTimeoutMS, 100, 60000),
		intRange("limits.total_timeout_ms", l.TotalTimeoutMS, 100, 3600000),
		intRange("limits.max_output_size_kb", l.MaxOutputSizeKB, 1, 65536),
		intRange("limits.max_output_ceiling_kb", l.MaxOutputCeilingKB, max(1, l.MaxOutputSizeKB), 1048576),
		intRange("limits.kept_output_kb", l.KeptOutputKB, 1, 65536),
		intRange("limits.kept_output_total_kb", l.KeptOutputTotalKB, 1, 1048576),
		intRange("limits.max_processes", l.MaxProcesses, 1, 4096),
		durRange("limits.run.timeout", l.Run.Timeout, time.Second, 300*time.Second),
		intRange("limits.run.memory_mb", l.Run.MemoryMB, 16, 65536),
		floatRange("limits.run.cpu_cores", l.Run.CPUCores, 0.05, 64),
		intRange("limits.run.max_processes", l.Run.MaxProcesses, 1, 4096),
		intRange("limits.run.max_output_chars", l.Run.MaxOutputChars, 1, 1<<30),
		durRange("limits.compile.timeout", l.Compile.Timeout, time.Second, 10*time.Minute),
		durRange("limits.checker.timeout", l.Checker.Timeout, 100*time.Millisecond, 5*time.Minute),
		intRange("limits.checker.memory_mb", l.Checker.MemoryMB, 16, 65536),
		intRange("limits.compile.memory_mb", l.Compile.MemoryMB, 16, 65536),
		floatRange("limits.compile.cpu_cores", l.Compile.CPUCores, 0.05, 64),
		intRange("limits.compile.max_processes", l.Compile.MaxProcesses, 1, 4096),
		durRange("limits.executor.timeout", l.Executor.Timeout, time.Second, time.Hour),
		intRange("limits.executor.max_output_mb", l.Executor.MaxOutputMB, 1, 1024),
	)
}

func (s *Security) validate() error {
	for _, f := range []struct {
		key string
		on  bool
	}{
		{"security.network_disabled", s.NetworkDisabled},
		{"security.read_only_root", s.ReadOnlyRoot},
		{"security.no_new_privileges", s.NoNewPrivileges},
		{"security.cap_drop_all", s.CapDropAll},
	} {
		if !f.on {
			return fmt.Errorf("%s: false is not supported: every backend always isolates this way", f.key)
		}
	}
	return nil
}

func (p *ControlPlane) validate() error {
	if p.URL != "" {
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("control_plane.url: %q is not an http(s) URL", p.URL)
		}
		if u.User != nil {
			return fmt.Errorf("control_plane.url: must not hold credentials; use INTERNAL_API_TOKEN")
		}
		if p.Token == "" {
			return fmt.Errorf("control_plane.token: empty while control_plane.url is set (set INTERNAL_API_TOKEN)")
		}
	}
	if !filepath.IsAbs(p.ResultsDir) {
		return fmt.Errorf("control_plane.results_dir: %q is not an absolute path", p.ResultsDir)
	}
	if err := intRange("control_plane.max_spool_results", p.MaxSpoolResults, 1, 1000000); err != nil {
		return err
	}
	if err := intRange("control_plane.max_spool_mb", p.MaxSpoolMB, 1, 1<<20); err != nil {
		return err
	}
	return durRange("control_plane.heartbeat_interval", p.HeartbeatInterval, time.Second, time.Minute)
}

func (s *Sessions) validate() error {
	return firstErr(
		durRange("sessions.idle_timeout", s.IdleTimeout, time.Minute, 7*24*time.Hour),
		intRange("sessions.max_count", s.MaxCount, 0, 100000),
		intRange("sessions.max_disk_mb", s.MaxDiskMB, 1, 1<<20),
		durRange("sessions.max_idle_timeout", s.MaxIdleTimeout, max(time.Minute, s.IdleTimeout.Std()), 7*24*time.Hour),
		intRange("sessions.max_file_mb", s.MaxFileMB, 1, 1<<20),
	)
}

// minCallbackSecret is the shortest server.callback_secret taken.
const minCallbackSecret = 16

// validateCallbacks checks the keys of asynchronous submissions.
func (s *Server) validateCallbacks() error {
	if s.CallbackSecret != "" && len(s.CallbackSecret) < minCallbackSecret {
		return fmt.Errorf("server.callback_secret: shorter than %d characters; use a long random secret", minCallbackSecret)
	}
	if err := egress.ParseAllow(s.CallbackAllowedHostList()); err != nil {
		return fmt.Errorf("server.callback_allowed_hosts: %w", err)
	}
	if s.CallbackSpoolDir != "" && !filepath.IsAbs(s.CallbackSpoolDir) {
		return fmt.Errorf("server.callback_spool_dir: %q is not an absolute path", s.CallbackSpoolDir)
	}
	return firstErr(
		durRange("server.callback_max_age", s.CallbackMaxAge, time.Minute, 30*24*time.Hour),
		durRange("server.callback_timeout", s.CallbackTimeout, time.Second, 5*time.Minute),
		intRange("server.callback_max_result_kb", s.CallbackMaxResultKB, 16, 65536),
		durRange("server.submission_ttl", s.SubmissionTTL, time.Second, 7*24*time.Hour),
		intRange("server.max_submissions", s.MaxSubmissions, 1, 100000),
	)
}
