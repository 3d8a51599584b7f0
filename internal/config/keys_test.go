package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	hashA = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" // sha256("hello")
	hashB = "486ea46224d1bb4fb680f34f7c9ad96a8f24ec88be73ea8e5a6c65260e9cb8a7" // sha256("world")
)

func TestAPIKeys(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "keys.yaml")
	if err := os.WriteFile(file, []byte("api_keys:\n  - name: from-file\n    key_sha256: "+hashB+"\n    max_sessions: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]byte(`server:
  api_keys:
    - name: ci
      key_sha256: `+hashA+`
      requests_per_second: 2.5
      burst: 4
      max_concurrent: 1
      max_sessions: 2
`), envOf(map[string]string{"CODERUNNER_SERVER_API_KEYS_FILE": file}))
	if err != nil {
		t.Fatal(err)
	}
	keys := c.Server.Keys()
	want := []APIKey{
		{Name: "ci", KeySHA256: hashA, RequestsPerSecond: 2.5, Burst: 4, MaxConcurrent: 1, MaxSessions: 2},
		{Name: "from-file", KeySHA256: hashB, MaxSessions: 3},
	}
	if len(keys) != 2 || keys[0] != want[0] || keys[1] != want[1] {
		t.Fatalf("Keys() = %+v, want %+v", keys, want)
	}
	if !c.Server.HasCredentials() || Default().Server.HasCredentials() {
		t.Error("HasCredentials is wrong")
	}
	if c.Sessions.MaxIdleTimeout.Std() != 24*time.Hour {
		t.Errorf("sessions.max_idle_timeout default %s", c.Sessions.MaxIdleTimeout)
	}
}

func TestAPIKeyErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := func(fields string) string {
		return "server:\n  api_keys:\n    - {" + fields + "}\n"
	}
	tests := []struct {
		name, yaml, file, want string
	}{
		{"misspelt field", key("name: a, key_sha256: " + hashA + ", max_sesions: 1"), "", `unknown key "server.api_keys[0].max_sesions"`},
		{"plain key instead of hash", key("name: a, key_sha256: hunter2"), "", "server.api_keys[0].key_sha256: must be the key's SHA-256"},
		{"upper-case hash", key("name: a, key_sha256: " + strings.ToUpper(hashA)), "", "server.api_keys[0].key_sha256: must be"},
		{"no name", key("key_sha256: " + hashA), "", `server.api_keys[0].name: "" must match`},
		{"name with a space", key("name: a b, key_sha256: " + hashA), "", `server.api_keys[0].name: "a b" must match`},
		{"long name", key("name: " + strings.Repeat("x", 65) + ", key_sha256: " + hashA), "", "server.api_keys[0].name:"},
		{"reserved name", key("name: api_token_2, key_sha256: " + hashA), "", `server.api_keys[0].name: "api_token_2" is reserved`},
		{"negative rate", key("name: a, key_sha256: " + hashA + ", requests_per_second: -1"), "", "server.api_keys[0].requests_per_second: -1 is out of range 0..100000"},
		{"NaN rate", key("name: a, key_sha256: " + hashA + ", requests_per_second: .nan"), "", "server.api_keys[0].requests_per_second: NaN is out of range"},
		{"burst without rate", key("name: a, key_sha256: " + hashA + ", burst: 3"), "", "server.api_keys[0].burst: set without requests_per_second"},
		{"negative burst", key("name: a, key_sha256: " + hashA + ", requests_per_second: 1, burst: -3"), "", "server.api_keys[0].burst: -3 is out of range"},
		{"negative concurrency", key("name: a, key_sha256: " + hashA + ", max_concurrent: -1"), "", "server.api_keys[0].max_concurrent: -1 is out of range"},
		{"negative sessions", key("name: a, key_sha256: " + hashA + ", max_sessions: -1"), "", "server.api_keys[0].max_sessions: -1 is out of range"},
		{"same name twice", "server:\n  api_keys:\n    - {name: a, key_sha256: " + hashA + "}\n    - {name: a, key_sha256: " + hashB + "}\n", "", `server.api_keys[1].name: "a" is the name of another key`},
		{"same key twice", "server:\n  api_keys:\n    - {name: a, key_sha256: " + hashA + "}\n    - {name: b, key_sha256: " + hashA + "}\n", "", "server.api_keys[1].key_sha256: the same key as server.api_keys[0]"},
		{"key equal to the token", "server:\n  api_token: hello\n  api_keys:\n    - {name: a, key_sha256: " + hashA + "}\n", "", "server.api_keys[0].key_sha256: the same key as server.api_token"},
		{"not a list", "server:\n  api_keys: ci\n", "", "line 2: server.api_keys must be a list"},
		{"relative file", "server:\n  api_keys_file: keys.yaml\n", "", `server.api_keys_file: "keys.yaml" is not an absolute path`},
		{"missing file", "server:\n  api_keys_file: " + filepath.Join(dir, "none.yaml") + "\n", "", "server.api_keys_file: unable to read config"},
		{"empty file", "", "", "holds no key"},
		{"misspelt key in file", "", "api_keys:\n  - {name: a, key_sha: " + hashA + "}\n", `unknown key "api_keys[0].key_sha"`},
		{"bad key in file", "", "api_keys:\n  - {name: a, key_sha256: xyz}\n", "api_keys[0].key_sha256: must be"},
		{"file key named like a config key", "server:\n  api_keys:\n    - {name: a, key_sha256: " + hashA + "}\n", "api_keys:\n  - {name: a, key_sha256: " + hashB + "}\n", `api_keys[0].name: "a" is the name of another key`},
		{"max idle below idle", "sessions:\n  idle_timeout: 2h\n  max_idle_timeout: 1h\n", "", "sessions.max_idle_timeout: 1h0m0s is out of range 2h0m0s..168h0m0s"},
		{"max idle too long", "sessions:\n  max_idle_timeout: 200h\n", "", "sessions.max_idle_timeout: 200h0m0s is out of range 30m0s..168h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := tt.yaml
			if tt.file != "" || tt.name == "empty file" {
				y += "server:\n  api_keys_file: " + write(strings.ReplaceAll(tt.name, " ", "_")+".yaml", tt.file) + "\n"
				if strings.HasPrefix(tt.yaml, "server:") {
					y = tt.yaml + "  api_keys_file: " + write(strings.ReplaceAll(tt.name, " ", "_")+".yaml", tt.file) + "\n"
				}
			}
			_, err := Parse([]byte(y), envOf(nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestAPIKeysNotFromEnvironment: the list has no variable of its own
// (server.api_keys_file has).
func TestAPIKeysNotFromEnvironment(t *testing.T) {
	if _, ok := EnvNames()["server.api_keys"]; ok {
		t.Error("server.api_keys is listed as settable from the environment")
	}
	if _, ok := EnvNames()["server.api_keys_file"]; !ok {
		t.Error("server.api_keys_file is not settable from the environment")
	}
}
