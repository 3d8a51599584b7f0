package config

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

// Config is the whole configuration of coderunner.
type Config struct {
	// Server configures the HTTP service.
	Server Server `yaml:"server"`
	// Backend chooses the sandbox backend.
	Backend Backend `yaml:"backend"`
	// Docker configures the docker backend.
	Docker Docker `yaml:"docker"`
	// Limits are the default and allowed resource limits.
	Limits Limits `yaml:"limits"`
	// Languages override or extend the built-in language table, by id.
	Languages map[string]lang.Recipe `yaml:"languages,omitempty"`
	// Security states the isolation every backend applies.
	Security Security `yaml:"security"`
	// ControlPlane configures the callbacks of /execute to its control plane.
	ControlPlane ControlPlane `yaml:"control_plane"`
	// Sessions bounds persistent session workspaces.
	Sessions Sessions `yaml:"sessions"`
}

// Server configures the HTTP service.
type Server struct {
	// Addr is the listen address. The default is loopback only.
	Addr string `yaml:"addr"`
	// APIToken, when set, is required as "Authorization: Bearer" on every
	// request (CODERUNNER_API_TOKEN). Several tokens, one per client, are
	// separated by commas; sessions are scoped to the token that made them.
	// serve refuses to start without one when Addr is not loopback or the
	// control plane is configured.
	APIToken Secret `yaml:"api_token"`
	// APIKeys are the API keys of the clients, each with a name and its
	// own limits, stored as SHA-256 digests (see APIKey). They work beside
	// APIToken.
	APIKeys []APIKey `yaml:"api_keys"`
	// APIKeysFile is a YAML file holding more keys, as "api_keys: [...]"
	// with the items of APIKeys; it is read when the configuration is
	// loaded (CODERUNNER_SERVER_API_KEYS_FILE).
	APIKeysFile string `yaml:"api_keys_file"`
	// fileKeys are the keys read from APIKeysFile.
	fileKeys []APIKey
	// MaxConcurrent is the number of executions running at once; 0 means
	// the number of CPUs.
	MaxConcurrent int `yaml:"max_concurrent"`
	// QueueSize is the number of requests that may wait for a slot; 0
	// means max(64, 16 × max_concurrent).
	QueueSize int `yaml:"queue_size"`
	// MaxBodyMB caps a request body.
	MaxBodyMB int `yaml:"max_body_mb"`
	// ReadHeaderTimeout bounds the reading of request headers.
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"`
	// ShutdownTimeout is the time from SIGTERM (or the end of serve) to
	// the exited callback and the exit: running executions are stopped
	// and reported crashed, and their results delivered, within it.
	ShutdownTimeout Duration `yaml:"shutdown_timeout"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"log_level"`
	// AllowedHosts are further names of the server (comma-separated,
	// "name" or "name:port") that the Host and Origin headers may carry,
	// besides localhost and the loopback addresses.
	AllowedHosts string `yaml:"allowed_hosts"`
	// ReadTimeout bounds the reading of a request's body after its
	// headers; a slower body is answered 408 and its connection closed.
	ReadTimeout Duration `yaml:"read_timeout"`
	// WriteTimeout bounds each write of an answer to the client; it is
	// renewed at every write, so it never cuts a long run or stream.
	WriteTimeout Duration `yaml:"write_timeout"`
	// IdleTimeout closes a kept-alive connection idle for this long.
	IdleTimeout Duration `yaml:"idle_timeout"`

	// CallbackSecret signs the results of asynchronous judge submissions
	// (POST /v1/judge with a callback_url), at least 16 characters
	// (CODERUNNER_SERVER_CALLBACK_SECRET); empty turns them off.
	CallbackSecret Secret `yaml:"callback_secret"`
	// CallbackAllowedHosts are destinations a callback may reach although
	// they are loopback, private or link-local (comma-separated host
	// names, IP addresses or CIDR prefixes); every other such address is
	// refused.
	CallbackAllowedHosts string `yaml:"callback_allowed_hosts"`
	// CallbackSpoolDir keeps the results not yet delivered to their
	// callbacks; empty means the directory callbacks in
	// control_plane.results_dir.
	CallbackSpoolDir string `yaml:"callback_spool_dir"`
	// CallbackMaxAge is how long a result is retried before its delivery
	// is given up.
	CallbackMaxAge Duration `yaml:"callback_max_age"`
	// CallbackTimeout bounds one delivery attempt.
	CallbackTimeout Duration `yaml:"callback_timeout"`
	// CallbackMaxResultKB bounds a result delivered (and kept for GET):
	// past it the tests' outputs are left out.
	CallbackMaxResultKB int `yaml:"callback_max_result_kb"`
	// SubmissionTTL is how long a finished submission stays visible to
	// GET /v1/judge/{id}.
	SubmissionTTL Duration `yaml:"submission_ttl"`
	// MaxSubmissions bounds the submissions kept at once (queued, running
	// or finished within submission_ttl); more are refused with 503.
	MaxSubmissions int `yaml:"max_submissions"`
}

// CallbackAllowedHostList is server.callback_allowed_hosts, split at
// commas.
func (s *Server) CallbackAllowedHostList() []string { return splitList(s.CallbackAllowedHosts) }

// CallbackSpool is the directory of undelivered callbacks.
func (c *Config) CallbackSpool() string {
	if c.Server.CallbackSpoolDir != "" {
		return c.Server.CallbackSpoolDir
	}
	return filepath.Join(c.ControlPlane.ResultsDir, "callbacks")
}

// APIKey is one client's key: the client sends the key as
// "Authorization: Bearer <key>", the server keeps only its digest.
type APIKey struct {
	// Name identifies the client in logs and metrics, and owns its
	// sessions; unique, ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$.
	Name string `yaml:"name"`
	// KeySHA256 is the SHA-256 of the key, 64 hex digits (coderunner
	// keyhash makes it).
	KeySHA256 string `yaml:"key_sha256"`
	// RequestsPerSecond and Burst bound the key's requests with a token
	// bucket: Burst requests at once, refilled at RequestsPerSecond; 0
	// means no bound. Burst defaults to RequestsPerSecond rounded up.
	RequestsPerSecond float64 `yaml:"requests_per_second"`
	Burst             int     `yaml:"burst"`
	// MaxConcurrent bounds the key's executions running or waiting for a
	// slot at once (and its MCP calls); 0 means no bound.
	MaxConcurrent int `yaml:"max_concurrent"`
	// MaxSessions bounds the key's open sessions; 0 means only the
	// server's sessions.max_count.
	MaxSessions int `yaml:"max_sessions"`
}

// Bounds of the API keys.
const (
	// MaxAPIKeys bounds the keys, and so the series of the metrics
	// labelled by key name.
	MaxAPIKeys = 1000
	// MaxKeyRate bounds requests_per_second and burst.
	MaxKeyRate = 100000
)

// The largest server.max_concurrent and server.queue_size.
const (
	MaxSlots = 1024
	MaxQueue = 100000
)

// Backend chooses and configures the sandbox backend.
type Backend struct {
	// Name is auto, native, bwrap or docker. auto takes the strongest that
	// works here, in that order.
	Name string `yaml:"name"`
	// WorkDir is the host directory under which workspaces are made; empty
	// means a coderunner directory in the system temporary directory.
	WorkDir string `yaml:"work_dir"`
	// WorkspaceSizeMB caps /workspace.
	WorkspaceSizeMB int `yaml:"workspace_size_mb"`
	// TmpSizeMB caps /tmp.
	TmpSizeMB int `yaml:"tmp_size_mb"`
	// OpenFiles is the number of open files per process.
	OpenFiles int `yaml:"open_files"`
	// BwrapPath is the bwrap binary; empty means looked up.
	BwrapPath string `yaml:"bwrap_path"`
	// SandboxPerTest gives every test of a judge a new sandbox. By
	// default the tests of one program share sandboxes where the backend
	// can keep one (native): each test still starts with no process, file
	// or IPC object of an earlier one, and its own usage counters, but in
	// the namespaces an earlier test of the same program used.
	SandboxPerTest bool `yaml:"sandbox_per_test"`
	// SandboxPerRequest gives every run a new sandbox, torn down after
	// it. By default the native backend keeps a sandbox whose run ended
	// normally for a later run of any request: that run gets new PID,
	// IPC and mount namespaces, empty /tmp and /workspace and its own
	// usage counters, but the user, network and UTS namespaces and the
	// cgroup an earlier request's run used (emptied: a sandbox whose run
	// left a socket or much memory charged is not kept).
	SandboxPerRequest bool `yaml:"sandbox_per_request"`
	// AllowRlimitsOnly lets the native and bwrap backends run programs
	// where no cgroup is usable (an ordinary user without a delegated
	// cgroup), with memory, process and CPU limits enforced per process
	// by rlimits only, not for the whole process tree; each result then
	// carries a warning. Without it such runs are refused.
	AllowRlimitsOnly bool `yaml:"allow_rlimits_only"`
}

// Docker configures the docker backend: images, pull policy, and how to
// reach the engine.
type Docker struct {
	// DefaultImagePrefix prefixes images built for coderunner.
	DefaultImagePrefix string `yaml:"default_image_prefix"`
	// PullPolicy is always, if_not_present or never.
	PullPolicy string `yaml:"pull_policy"`
	// Host is the engine's address; empty means DOCKER_HOST or the local
	// socket.
	Host string `yaml:"host"`
	// User is the non-root "uid:gid" that runs code in every container;
	// empty gives each container a host uid (and gid) of its own.
	User string `yaml:"user"`
	// ReuseContainers keeps a container per program between its runs
	// instead of one per run: faster, but a run can tell from its process
	// ids how many processes the runs before it started.
	ReuseContainers bool `yaml:"reuse_containers"`
	// Warm is how many containers serve, mcp and judge keep created and
	// started ahead of need for each kind of run seen (an image and the
	// limits fixed at a container's creation), from 0 (none) to
	// MaxDockerWarm: a run of a new program then costs neither a
	// container's creation nor an exec. Each still serves one run. It needs root and
	// an engine on this machine; a one-off run starts none.
	Warm int `yaml:"warm"`
}

// MaxDockerWarm bounds docker.warm.
const MaxDockerWarm = 8

// Limits are the default and allowed resource limits. The flat fields are
// the judge's limits.
type Limits struct {
	// MemoryMB is the judge's default memory limit per test.
	MemoryMB int `yaml:"memory_mb"`
	// CPUCores is the judge's CPU bandwidth per test.
	CPUCores float64 `yaml:"cpu_cores"`
	// PerTestTimeoutMS is the judge's default wall-time limit per test.
	PerTestTimeoutMS int `yaml:"per_test_timeout_ms"`
	// TotalTimeoutMS bounds a whole judge request.
	TotalTimeoutMS int `yaml:"total_timeout_ms"`
	// MaxOutputSizeKB caps a test's output.
	MaxOutputSizeKB int `yaml:"max_output_size_kb"`
	// MaxOutputCeilingKB is the highest cap a request's expected outputs
	// can raise MaxOutputSizeKB to (twice the largest of them).
	MaxOutputCeilingKB int `yaml:"max_output_ceiling_kb"`
	// KeptOutputKB is how much of each test's stdout and stderr a judge
	// result keeps (actual_output, error_message).
	KeptOutputKB int `yaml:"kept_output_kb"`
	// KeptOutputTotalKB bounds what a judge result keeps of the outputs
	// over all its tests.
	KeptOutputTotalKB int `yaml:"kept_output_total_kb"`
	// MaxProcesses is the judge's process limit per test.
	MaxProcesses int `yaml:"max_processes"`

	// Run holds the defaults of run, /v1/run and execute_code.
	Run RunLimits `yaml:"run"`
	// Compile holds the limits of a compile step.
	Compile CompileLimits `yaml:"compile"`
	// Executor holds the defaults of /execute.
	Executor ExecutorLimits `yaml:"executor"`
	// Checker holds the limits of a judge request's checker and
	// interactor.
	Checker CheckerLimits `yaml:"checker"`
}

// CheckerLimits bound each run of a judge request's checker or
// interactor, apart from the solution's limits.
type CheckerLimits struct {
	// Timeout is the CPU and wall time of each run; an interactor's wall
	// time is the test's time limit plus this.
	Timeout Duration `yaml:"timeout"`
	// MemoryMB is the memory limit of each run.
	MemoryMB int `yaml:"memory_mb"`
}

// RunLimits are the default limits of a single run (run, /v1/run,
// execute_code).
type RunLimits struct {
	// Timeout is the wall-time limit.
	Timeout Duration `yaml:"timeout"`
	// MemoryMB is the memory limit of the process tree.
	MemoryMB int `yaml:"memory_mb"`
	// CPUCores is the CPU bandwidth.
	CPUCores float64 `yaml:"cpu_cores"`
	// MaxProcesses limits processes and threads.
	MaxProcesses int `yaml:"max_processes"`
	// MaxOutputChars caps each output stream.
	MaxOutputChars int `yaml:"max_output_chars"`
}

// CompileLimits bound a compile step, which is charged separately from the
// run.
type CompileLimits struct {
	// Timeout is the wall-time limit of the compiler.
	Timeout Duration `yaml:"timeout"`
	// MemoryMB is the compiler's memory limit.
	MemoryMB int `yaml:"memory_mb"`
	// CPUCores is the compiler's CPU bandwidth.
	CPUCores float64 `yaml:"cpu_cores"`
	// MaxProcesses is higher than a run's: go build and javac start many
	// threads. Its default, 256, is runner.DefaultCompileLimits': with
	// 128 the Go build cache seed (go build of the standard library)
	// fails or crawls.
	MaxProcesses int `yaml:"max_processes"`
}

// Sandbox returns the limits of a compile step as the sandbox takes them.
func (c CompileLimits) Sandbox() sandbox.Limits {
	return sandbox.Limits{
		WallTime:  c.Timeout.Std(),
		CPUTime:   c.Timeout.Std(),
		Memory:    int64(c.MemoryMB) * sandbox.MiB,
		CPUs:      c.CPUCores,
		Processes: c.MaxProcesses,
	}
}

// ExecutorLimits are the defaults of /execute.
type ExecutorLimits struct {
	// Timeout is the default of a request that gives none.
	Timeout Duration `yaml:"timeout"`
	// MaxOutputMB caps each of stdout and stderr.
	MaxOutputMB int `yaml:"max_output_mb"`
}

// Security is the security section. Every backend always isolates this
// way; the settings exist so that configurations that state them load,
// and false is refused.
type Security struct {
	// NetworkDisabled: no network inside the sandbox.
	NetworkDisabled bool `yaml:"network_disabled"`
	// ReadOnlyRoot: system files are read-only.
	ReadOnlyRoot bool `yaml:"read_only_root"`
	// NoNewPrivileges: no set-uid escalation.
	NoNewPrivileges bool `yaml:"no_new_privileges"`
	// CapDropAll: every capability dropped.
	CapDropAll bool `yaml:"cap_drop_all"`
}

// ControlPlane configures the callbacks of /execute to its control plane.
type ControlPlane struct {
	// URL is the control plane's base URL (CONTROL_PLANE_URL); empty turns
	// reporting off.
	URL string `yaml:"url"`
	// Token authenticates the callbacks (INTERNAL_API_TOKEN).
	Token Secret `yaml:"token"`
	// ContainerID identifies this executor (CONTAINER_ID).
	ContainerID string `yaml:"container_id"`
	// PodName is the Kubernetes pod, if any (POD_NAME).
	PodName string `yaml:"pod_name"`
	// ResultsDir keeps results not yet delivered (RESULTS_DIR).
	ResultsDir string `yaml:"results_dir"`
	// HeartbeatInterval is the time between heartbeats of a running
	// execution.
	HeartbeatInterval Duration `yaml:"heartbeat_interval"`
	// MaxSpoolResults and MaxSpoolMB bound the results waiting for the
	// control plane; past either, /execute answers 503 until some are
	// delivered.
	MaxSpoolResults int `yaml:"max_spool_results"`
	MaxSpoolMB      int `yaml:"max_spool_mb"`
}

// Sessions bounds the persistent workspaces of sessions.
type Sessions struct {
	// IdleTimeout ends a session not used for this long.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// MaxCount is the number of live sessions; 0 turns sessions off.
	MaxCount int `yaml:"max_count"`
	// MaxDiskMB caps the disk used by all sessions together.
	MaxDiskMB int `yaml:"max_disk_mb"`
	// MaxIdleTimeout is the longest idle timeout a request may give its
	// session (session_ttl_seconds); at least IdleTimeout.
	MaxIdleTimeout Duration `yaml:"max_idle_timeout"`
	// MaxFileMB caps one file written into a session over the files
	// endpoints (PUT /v1/sessions/{id}/files/{path}, write_file); a
	// session's workspace cap (backend.workspace_size_mb) bounds it too.
	MaxFileMB int `yaml:"max_file_mb"`
}

// Default returns the configuration used when nothing is set.
func Default() *Config {
	return &Config{
		Server: Server{
			Addr:              "127.0.0.1:8080",
			MaxBodyMB:         16,
			ReadHeaderTimeout: Duration(10 * time.Second),
			ReadTimeout:       Duration(60 * time.Second),
			WriteTimeout:      Duration(60 * time.Second),
			IdleTimeout:       Duration(120 * time.Second),
			ShutdownTimeout:   Duration(2 * time.Second),
			LogLevel:          "info",
			// The control plane's give-up horizon has none; a client's
			// callback gets a day.
			CallbackMaxAge:      Duration(24 * time.Hour),
			CallbackTimeout:     Duration(10 * time.Second),
			CallbackMaxResultKB: 1024,
			SubmissionTTL:       Duration(time.Hour),
			MaxSubmissions:      1000,
		},
		Backend: Backend{
			Name:            "auto",
			WorkspaceSizeMB: 256,
			TmpSizeMB:       64,
			OpenFiles:       256,
		},
		Docker: Docker{
			DefaultImagePrefix: "coderunner",
			PullPolicy:         "if_not_present",
			Warm:               2,
		},
		Limits: Limits{
			MemoryMB:         256,
			CPUCores:         1.0,
			PerTestTimeoutMS: 5000,
			TotalTimeoutMS:   60000,
			MaxOutputSizeKB:  64,
			// 2 * judge.MaxTestFieldBytes: every valid expected output fits.
			MaxOutputCeilingKB: 16384,
			KeptOutputKB:       64,
			KeptOutputTotalKB:  1024,
			MaxProcesses:       64,
			Run: RunLimits{
				Timeout:        Duration(30 * time.Second),
				MemoryMB:       256,
				CPUCores:       0.5,
				MaxProcesses:   50,
				MaxOutputChars: 100000,
			},
			// runner.DefaultCompileLimits, which the compile steps of
			// run and judge share (internal/assembly's tests keep the
			// two equal: this package lies below runner).
			// judge.DefaultToolLimits.
			Checker: CheckerLimits{
				Timeout:  Duration(10 * time.Second),
				MemoryMB: 512,
			},
			Compile: CompileLimits{
				Timeout:      Duration(30 * time.Second),
				MemoryMB:     512,
				CPUCores:     1.0,
				MaxProcesses: 256,
			},
			Executor: ExecutorLimits{
				Timeout:     Duration(30 * time.Second),
				MaxOutputMB: 10,
			},
		},
		Security: Security{
			NetworkDisabled: true,
			ReadOnlyRoot:    true,
			NoNewPrivileges: true,
			CapDropAll:      true,
		},
		ControlPlane: ControlPlane{
			ResultsDir:        "/tmp/results",
			HeartbeatInterval: Duration(5 * time.Second),
			MaxSpoolResults:   1000,
			MaxSpoolMB:        256,
		},
		Sessions: Sessions{
			IdleTimeout: Duration(30 * time.Minute),
			MaxCount:    100,
			MaxDiskMB:   4096,
			// A day: a session may span a working day's pauses, and
			// sessions.max_count and max_disk_mb bound what idle ones hold.
			MaxIdleTimeout: Duration(24 * time.Hour),
			MaxFileMB:      16,
		},
	}
}

// LanguageTable builds the language table: the embedded recipes with the
// languages section's overrides.
func (c *Config) LanguageTable() (*lang.Table, error) { return lang.New(c.Languages) }

// Keys are the API keys of server.api_keys and then those of
// server.api_keys_file (read by Load).
func (s *Server) Keys() []APIKey {
	return append(append([]APIKey(nil), s.APIKeys...), s.fileKeys...)
}

// HasCredentials reports whether any API token or key is set.
func (s *Server) HasCredentials() bool { return len(s.APITokens()) > 0 || len(s.Keys()) > 0 }

// APITokens are the tokens of server.api_token, split at commas.
func (s *Server) APITokens() []string { return splitList(string(s.APIToken)) }

// AllowedHostList is server.allowed_hosts, split at commas.
func (s *Server) AllowedHostList() []string { return splitList(s.AllowedHosts) }

// splitList splits a comma-separated list, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
