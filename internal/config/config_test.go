package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/coderunner/coderunner/sandbox"
)

// envOf returns an env function that sees only m.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestDefaultValidates(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// The contract's defaults.
	checks := []struct {
		name      string
		got, want any
	}{
		{"server.addr", c.Server.Addr, "127.0.0.1:8080"},
		{"backend.name", c.Backend.Name, "auto"},
		{"run timeout", c.Limits.Run.Timeout.Std(), 30 * time.Second},
		{"run memory", c.Limits.Run.MemoryMB, 256},
		{"run cpus", c.Limits.Run.CPUCores, 0.5},
		{"run pids", c.Limits.Run.MaxProcesses, 50},
		{"run output", c.Limits.Run.MaxOutputChars, 100000},
		{"per test", c.Limits.PerTestTimeoutMS, 5000},
		{"total", c.Limits.TotalTimeoutMS, 60000},
		{"judge memory", c.Limits.MemoryMB, 256},
		{"judge cpu", c.Limits.CPUCores, 1.0},
		{"judge output", c.Limits.MaxOutputSizeKB, 64},
		{"judge output ceiling", c.Limits.MaxOutputCeilingKB, 16384},
		{"judge kept output", c.Limits.KeptOutputKB, 64},
		{"judge kept output total", c.Limits.KeptOutputTotalKB, 1024},
		{"checker memory", c.Limits.Checker.MemoryMB, 512},
		{"compile timeout", c.Limits.Compile.Timeout.Std(), 30 * time.Second},
		{"compile memory", c.Limits.Compile.MemoryMB, 512},
		{"results dir", c.ControlPlane.ResultsDir, "/tmp/results"},
		{"session idle", c.Sessions.IdleTimeout.Std(), 30 * time.Minute},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestLoadNoFile(t *testing.T) {
	c, err := Load("", envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("Load(\"\") = %+v, want the defaults", c)
	}
}

func TestLoadExample(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "coderunner_config.yaml"), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	tab, err := c.LanguageTable()
	if err != nil {
		t.Fatal(err)
	}
	rb, err := tab.Lookup("rb")
	if err != nil || rb.ID != "ruby" || rb.TimeoutFactor != 1.2 {
		t.Errorf("ruby from the example: %+v, %v", rb, err)
	}
	cpp, _ := tab.Lookup("cpp")
	if !cpp.Compiled || cpp.Image != "gcc:12" {
		t.Errorf("cpp from the example: %+v", cpp)
	}
	// The example documents the defaults: apart from languages it sets
	// exactly them.
	c.Languages = nil
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("the example's values differ from Default():\n got %+v\nwant %+v", c, Default())
	}
}

// TestExampleCoversEveryKey keeps the documented example complete.
func TestExampleCoversEveryKey(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "coderunner_config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for key := range EnvNames() {
		var cur any = m
		for _, part := range strings.Split(key, ".") {
			mm, ok := cur.(map[string]any)
			if !ok {
				t.Errorf("example: %s is not a section", key)
				break
			}
			cur, ok = mm[part]
			if !ok {
				t.Errorf("example lacks %s", key)
				break
			}
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), envOf(nil)); err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
}

func TestEnvOverrides(t *testing.T) {
	env := map[string]string{
		"CODERUNNER_SERVER_ADDR":               "0.0.0.0:9090",
		"CODERUNNER_LIMITS_MEMORY_MB":          "512",
		"CODERUNNER_LIMITS_CPU_CORES":          "2.5",
		"CODERUNNER_LIMITS_RUN_TIMEOUT":        "1500ms",
		"CODERUNNER_LIMITS_COMPILE_TIMEOUT":    "45",
		"CODERUNNER_SESSIONS_IDLE_TIMEOUT":     "1h",
		"CODERUNNER_BACKEND":                   "native",
		"CODERUNNER_API_TOKEN":                 "api-secret",
		"CONTROL_PLANE_URL":                    "http://cp:8000",
		"INTERNAL_API_TOKEN":                   "tok-123",
		"CONTAINER_ID":                         "c-1",
		"POD_NAME":                             "pod-1",
		"RESULTS_DIR":                          "/var/results",
		"CODERUNNER_CONTROL_PLANE_RESULTS_DIR": "/srv/results", // wins over RESULTS_DIR
		"CODERUNNER_SECURITY_CAP_DROP_ALL":     "true",
		"CODERUNNER_DOCKER_WARM":               "0",
	}
	c, err := Load(filepath.Join("testdata", "coderunner_config.yaml"), envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"addr", c.Server.Addr, "0.0.0.0:9090"},
		{"memory", c.Limits.MemoryMB, 512},
		{"cpu", c.Limits.CPUCores, 2.5},
		{"run timeout", c.Limits.Run.Timeout.Std(), 1500 * time.Millisecond},
		{"compile timeout", c.Limits.Compile.Timeout.Std(), 45 * time.Second},
		{"idle", c.Sessions.IdleTimeout.Std(), time.Hour},
		{"backend", c.Backend.Name, "native"},
		{"api token", string(c.Server.APIToken), "api-secret"},
		{"url", c.ControlPlane.URL, "http://cp:8000"},
		{"token", string(c.ControlPlane.Token), "tok-123"},
		{"container", c.ControlPlane.ContainerID, "c-1"},
		{"pod", c.ControlPlane.PodName, "pod-1"},
		{"results", c.ControlPlane.ResultsDir, "/srv/results"},
		{"docker warm", c.Docker.Warm, 0},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestEnvErrors(t *testing.T) {
	tests := []struct{ name, val, want string }{
		{"CODERUNNER_LIMITS_MEMORY_MB", "lots", `CODERUNNER_LIMITS_MEMORY_MB: "lots" is not an integer`},
		{"CODERUNNER_LIMITS_CPU_CORES", "fast", `CODERUNNER_LIMITS_CPU_CORES: "fast" is not a number`},
		{"CODERUNNER_SECURITY_READ_ONLY_ROOT", "yes please", `CODERUNNER_SECURITY_READ_ONLY_ROOT: "yes please" is not true or false`},
		{"CODERUNNER_LIMITS_RUN_TIMEOUT", "soon", `CODERUNNER_LIMITS_RUN_TIMEOUT: "soon" is not a duration`},
		{"CODERUNNER_LIMITS_MEMORY_MB", "0", "limits.memory_mb: 0 is out of range 16..1024"},
		{"CODERUNNER_LIMITS_CPU_CORES", "NaN", "limits.cpu_cores: NaN is out of range 0.05..64"},
	}
	for _, tt := range tests {
		_, err := Load("", envOf(map[string]string{tt.name: tt.val}))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s=%s: error %v, want %q", tt.name, tt.val, err, tt.want)
		}
	}
}

func TestEnvNames(t *testing.T) {
	names := EnvNames()
	for key, want := range map[string][]string{
		"limits.run.timeout":  {"CODERUNNER_LIMITS_RUN_TIMEOUT"},
		"control_plane.token": {"INTERNAL_API_TOKEN", "CODERUNNER_CONTROL_PLANE_TOKEN"},
		"server.addr":         {"CODERUNNER_SERVER_ADDR"},
	} {
		if !reflect.DeepEqual(names[key], want) {
			t.Errorf("EnvNames()[%s] = %v, want %v", key, names[key], want)
		}
	}
	if _, ok := names["languages"]; ok {
		t.Error("languages is not settable from the environment")
	}
}

func TestStrictDecoding(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"unknown section", "serverr:\n  addr: x\n", `line 1: unknown key "serverr"`},
		{"unknown key", "server:\n  adr: x\n", `line 2: unknown key "server.adr"`},
		{"unknown nested key", "limits:\n  run:\n    timout: 3s\n", `line 3: unknown key "limits.run.timout"`},
		{"unknown recipe key", "languages:\n  c:\n    compiler: gcc\n", `unknown recipe field "compiler"`},
		{"section not a mapping", "limits: 5\n", "line 1: limits must be a mapping"},
		{"not a mapping", "- a\n", "the configuration must be a mapping"},
		{"wrong type", "limits:\n  memory_mb: lots\n", "cannot unmarshal"},
		{"bad duration", "sessions:\n  idle_timeout: forever\n", `"forever" is not a duration`},
		{"two documents", "server: {}\n---\nserver: {}\n", "more than one YAML document"},
		{"syntax", "server: [\n", "yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), envOf(nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestEmptyDocuments(t *testing.T) {
	for _, src := range []string{"", "# nothing\n", "~\n", "server:\n"} {
		c, err := Parse([]byte(src), envOf(nil))
		if err != nil {
			t.Errorf("Parse(%q): %v", src, err)
			continue
		}
		if !reflect.DeepEqual(c, Default()) {
			t.Errorf("Parse(%q) changed the defaults: %+v", src, c)
		}
	}
}

func TestDurations(t *testing.T) {
	tests := []struct {
		src  string
		want time.Duration
	}{
		{"30s", 30 * time.Second}, {"1500ms", 1500 * time.Millisecond}, {"30", 30 * time.Second},
		{"0.5", 500 * time.Millisecond}, {"2m", 2 * time.Minute},
	}
	for _, tt := range tests {
		c, err := Parse([]byte("server:\n  shutdown_timeout: "+tt.src+"\n"), envOf(nil))
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if got := c.Server.ShutdownTimeout.Std(); got != tt.want {
			t.Errorf("%s = %v, want %v", tt.src, got, tt.want)
		}
	}
	for _, bad := range []string{"-1", "1e300", "abc", "-5s"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) succeeded", bad)
		}
	}
}

func TestValidationMessages(t *testing.T) {
	tests := []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Limits.MemoryMB = 0 }, "limits.memory_mb: 0 is out of range 16..1024"},
		{func(c *Config) { c.Limits.MemoryMB = 2048 }, "limits.memory_mb: 2048 is out of range 16..1024"},
		{func(c *Config) { c.Limits.CPUCores = 0 }, "limits.cpu_cores: 0 is out of range 0.05..64"},
		{func(c *Config) { c.Limits.PerTestTimeoutMS = 50 }, "limits.per_test_timeout_ms: 50 is out of range 100..60000"},
		{func(c *Config) { c.Limits.TotalTimeoutMS = 0 }, "limits.total_timeout_ms: 0 is out of range 100..3600000"},
		{func(c *Config) { c.Limits.MaxOutputSizeKB = 0 }, "limits.max_output_size_kb: 0 is out of range 1..65536"},
		{func(c *Config) { c.Limits.MaxOutputCeilingKB = 32 }, "limits.max_output_ceiling_kb: 32 is out of range 64..1048576"},
		{func(c *Config) { c.Limits.KeptOutputKB = 0 }, "limits.kept_output_kb: 0 is out of range 1..65536"},
		{func(c *Config) { c.Limits.KeptOutputTotalKB = 0 }, "limits.kept_output_total_kb: 0 is out of range 1..1048576"},
		{func(c *Config) { c.Limits.MaxProcesses = 0 }, "limits.max_processes: 0 is out of range 1..4096"},
		{func(c *Config) { c.Limits.Run.Timeout = Duration(301 * time.Second) }, "limits.run.timeout: 5m1s is out of range 1s..5m0s"},
		{func(c *Config) { c.Limits.Run.MemoryMB = 8 }, "limits.run.memory_mb: 8 is out of range 16..65536"},
		{func(c *Config) { c.Limits.Run.CPUCores = 100 }, "limits.run.cpu_cores: 100 is out of range 0.05..64"},
		{func(c *Config) { c.Limits.Run.MaxProcesses = 0 }, "limits.run.max_processes: 0 is out of range 1..4096"},
		{func(c *Config) { c.Limits.Run.MaxOutputChars = 0 }, "limits.run.max_output_chars: 0 is out of range 1..1073741824"},
		{func(c *Config) { c.Limits.Compile.Timeout = 0 }, "limits.compile.timeout: 0s is out of range 1s..10m0s"},
		{func(c *Config) { c.Limits.Checker.Timeout = Duration(time.Hour) }, "limits.checker.timeout: 1h0m0s is out of range 100ms..5m0s"},
		{func(c *Config) { c.Limits.Checker.MemoryMB = 8 }, "limits.checker.memory_mb: 8 is out of range 16..65536"},
		{func(c *Config) { c.Limits.Compile.MemoryMB = 0 }, "limits.compile.memory_mb: 0 is out of range 16..65536"},
		{func(c *Config) { c.Limits.Compile.CPUCores = 0 }, "limits.compile.cpu_cores: 0 is out of range 0.05..64"},
		{func(c *Config) { c.Limits.Compile.MaxProcesses = 0 }, "limits.compile.max_processes: 0 is out of range 1..4096"},
		{func(c *Config) { c.Limits.Executor.Timeout = 0 }, "limits.executor.timeout: 0s is out of range 1s..1h0m0s"},
		{func(c *Config) { c.Limits.Executor.MaxOutputMB = 0 }, "limits.executor.max_output_mb: 0 is out of range 1..1024"},
		{func(c *Config) { c.Server.Addr = "8080" }, `server.addr: "8080" is not host:port`},
		{func(c *Config) { c.Server.Addr = "localhost:http" }, `server.addr: "localhost:http" has no valid port`},
		{func(c *Config) { c.Server.MaxConcurrent = -1 }, "server.max_concurrent: -1 is out of range 0..1024"},
		{func(c *Config) { c.Server.QueueSize = -1 }, "server.queue_size: -1 is out of range 0..100000"},
		{func(c *Config) { c.ControlPlane.MaxSpoolResults = 0 }, "control_plane.max_spool_results: 0 is out of range 1..1000000"},
		{func(c *Config) { c.ControlPlane.MaxSpoolMB = -1 }, "control_plane.max_spool_mb: -1 is out of range 1..1048576"},
		{func(c *Config) { c.Server.MaxBodyMB = 0 }, "server.max_body_mb: 0 is out of range 1..1024"},
		{func(c *Config) { c.Server.ReadHeaderTimeout = 0 }, "server.read_header_timeout: 0s is out of range 1s..1m0s"},
		{func(c *Config) { c.Server.ShutdownTimeout = Duration(time.Hour) }, "server.shutdown_timeout: 1h0m0s is out of range 0s..10m0s"},
		{func(c *Config) { c.Server.LogLevel = "loud" }, `server.log_level: "loud" is not one of debug, info, warn, error`},
		{func(c *Config) { c.Backend.Name = "vm" }, `backend.name: "vm" is not one of auto, native, bwrap, docker`},
		{func(c *Config) { c.Backend.WorkDir = "work" }, `backend.work_dir: "work" is not an absolute path`},
		{func(c *Config) { c.Backend.BwrapPath = "bwrap" }, `backend.bwrap_path: "bwrap" is not an absolute path`},
		{func(c *Config) { c.Backend.WorkspaceSizeMB = 0 }, "backend.workspace_size_mb: 0 is out of range 1..16384"},
		{func(c *Config) { c.Backend.TmpSizeMB = 0 }, "backend.tmp_size_mb: 0 is out of range 1..16384"},
		{func(c *Config) { c.Backend.OpenFiles = 1 }, "backend.open_files: 1 is out of range 16..65536"},
		{func(c *Config) { c.Docker.PullPolicy = "sometimes" }, `docker.pull_policy: "sometimes" is not one of always, if_not_present, never`},
		{func(c *Config) { c.Docker.Host = "ftp://x" }, `docker.host: "ftp://x" is not a unix://, tcp:// or http(s):// address`},
		{func(c *Config) { c.Docker.User = "0:0" }, `docker.user: "0:0" must name a non-root user`},
		{func(c *Config) { c.Docker.User = "root" }, `docker.user: "root" must name a non-root user`},
		{func(c *Config) { c.Docker.Warm = -1 }, `docker.warm: -1 is out of range 0..8`},
		{func(c *Config) { c.Docker.Warm = 9 }, `docker.warm: 9 is out of range 0..8`},
		{func(c *Config) { c.Security.NetworkDisabled = false }, "security.network_disabled: false is not supported"},
		{func(c *Config) { c.Security.ReadOnlyRoot = false }, "security.read_only_root: false is not supported"},
		{func(c *Config) { c.Security.NoNewPrivileges = false }, "security.no_new_privileges: false is not supported"},
		{func(c *Config) { c.Security.CapDropAll = false }, "security.cap_drop_all: false is not supported"},
		{func(c *Config) { c.ControlPlane.URL = "cp:8000" }, `control_plane.url: "cp:8000" is not an http(s) URL`},
		{func(c *Config) { c.ControlPlane.URL = "http://cp" }, "control_plane.token: empty while control_plane.url is set"},
		{func(c *Config) { c.ControlPlane.URL, c.ControlPlane.Token = "http://u:p@cp", "t" }, "control_plane.url: must not hold credentials"},
		{func(c *Config) { c.ControlPlane.ResultsDir = "results" }, `control_plane.results_dir: "results" is not an absolute path`},
		{func(c *Config) { c.ControlPlane.HeartbeatInterval = 0 }, "control_plane.heartbeat_interval: 0s is out of range 1s..1m0s"},
		{func(c *Config) { c.Sessions.IdleTimeout = Duration(time.Second) }, "sessions.idle_timeout: 1s is out of range 1m0s..168h0m0s"},
		{func(c *Config) { c.Sessions.MaxCount = -1 }, "sessions.max_count: -1 is out of range 0..100000"},
		{func(c *Config) { c.Sessions.MaxDiskMB = 0 }, "sessions.max_disk_mb: 0 is out of range 1..1048576"},
		{func(c *Config) { c.Sessions.MaxFileMB = 0 }, "sessions.max_file_mb: 0 is out of range 1..1048576"},
	}
	for _, tt := range tests {
		c := Default()
		tt.edit(c)
		err := c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Validate() = %v, want %q", err, tt.want)
		}
	}
}

func TestValidateLanguages(t *testing.T) {
	_, err := Parse([]byte("languages:\n  cobol:\n    source: a.cob\n"), envOf(nil))
	if err == nil || !strings.Contains(err.Error(), "languages.cobol.run: empty") {
		t.Errorf("error %v, want one naming languages.cobol.run", err)
	}
}

func TestSecretRedaction(t *testing.T) {
	const token = "s3cr3t-t0ken"
	c, err := Load("", envOf(map[string]string{
		"INTERNAL_API_TOKEN": token, "CONTROL_PLANE_URL": "https://cp.example", "CODERUNNER_API_TOKEN": token,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if string(c.ControlPlane.Token) != token {
		t.Fatalf("token not loaded")
	}
	var logJSON, logText bytes.Buffer
	slog.New(slog.NewJSONHandler(&logJSON, nil)).Info("config", "config", c, "token", c.ControlPlane.Token)
	slog.New(slog.NewTextHandler(&logText, nil)).Info("config", "config", c, "token", c.ControlPlane.Token)
	js, _ := json.Marshal(c)
	ym, _ := yaml.Marshal(c)
	outputs := map[string]string{
		"%v": fmt.Sprintf("%v", c), "%+v": fmt.Sprintf("%+v", c), "%#v": fmt.Sprintf("%#v", c),
		"%s": fmt.Sprintf("%s", c.ControlPlane.Token), "%q": fmt.Sprintf("%q", c.ControlPlane.Token),
		"%x": fmt.Sprintf("%x", c.ControlPlane.Token), "%v token": fmt.Sprintf("%v", c.ControlPlane.Token),
		"slog json": logJSON.String(), "slog text": logText.String(), "json": string(js), "yaml": string(ym),
	}
	for name, out := range outputs {
		if strings.Contains(out, token) {
			t.Errorf("%s shows the token: %s", name, out)
		}
		if !strings.Contains(out, Redacted) {
			t.Errorf("%s does not show %s: %s", name, Redacted, out)
		}
	}
	if got := fmt.Sprint(Secret("")); got != "" {
		t.Errorf("empty secret prints %q", got)
	}
}

func FuzzParse(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "coderunner_config.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte("limits: {memory_mb: 17, run: {timeout: 2}}\n"))
	f.Add([]byte("a: &x {b: *x}\n"))
	f.Add([]byte("server: !!binary aGk=\n"))
	f.Add([]byte("languages: {c: {compile: true}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, envOf(nil))
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse returned a config that does not validate: %v", err)
		}
	})
}

func TestCompileLimitsSandbox(t *testing.T) {
	c := CompileLimits{Timeout: Duration(45 * time.Second), MemoryMB: 768, CPUCores: 2, MaxProcesses: 128}
	want := sandbox.Limits{WallTime: 45 * time.Second, CPUTime: 45 * time.Second, Memory: 768 * sandbox.MiB, CPUs: 2, Processes: 128}
	if got := c.Sandbox(); got != want {
		t.Fatalf("Sandbox() = %+v, want %+v", got, want)
	}
}

// EnvNames maps every key settable from the environment to the variables
// that set it, the CODERUNNER_ name last.
func EnvNames() map[string][]string {
	out := map[string][]string{}
	for _, l := range leaves(reflect.ValueOf(Default()).Elem(), "") {
		var names []string
		if n, ok := legacyEnv[l.key]; ok {
			names = append(names, n)
		}
		out[l.key] = append(names, EnvName(l.key))
	}
	return out
}

// Parse is Load for a file's content already in memory.
func Parse(data []byte, env func(string) (string, bool)) (*Config, error) {
	return parse(data, env, nil)
}
