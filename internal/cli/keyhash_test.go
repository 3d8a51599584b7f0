package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/httpapi"
)

func digest(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

func TestKeyhash(t *testing.T) {
	const key = "cr_0123456789abcdefXYZ"
	for _, stdin := range []string{key, key + "\n", key + "\r\n"} {
		ta := newApp(t, stdin)
		if code := ta.Run(context.Background(), []string{"keyhash"}); code != ExitOK {
			t.Fatalf("keyhash: exit %d, %s", code, ta.stderr)
		}
		if got := ta.stdout.String(); got != digest(key)+"\n" {
			t.Errorf("keyhash of %q printed %q, want its digest", stdin, got)
		}
		if strings.Contains(ta.stdout.String()+ta.stderr.String(), key) {
			t.Error("keyhash printed the key")
		}
	}
	ta := newApp(t, key)
	if code := ta.Run(context.Background(), []string{"keyhash", "--json"}); code != ExitOK || ta.stdout.String() != `{"key_sha256":"`+digest(key)+"\"}\n" {
		t.Errorf("keyhash --json: exit %d, %q", code, ta.stdout)
	}

	// --new: a key and its digest, different each time.
	var keys []string
	for range 2 {
		ta := newApp(t, "")
		if code := ta.Run(context.Background(), []string{"keyhash", "--new", "--json"}); code != ExitOK {
			t.Fatalf("keyhash --new: exit %d, %s", code, ta.stderr)
		}
		var out keyhashOut
		if err := json.Unmarshal(ta.stdout.Bytes(), &out); err != nil || out.KeySHA256 != digest(out.Key) || checkKey(out.Key) != nil {
			t.Fatalf("keyhash --new --json: %q %v", ta.stdout, err)
		}
		keys = append(keys, out.Key)
	}
	if keys[0] == keys[1] || len(keys[0]) < 40 {
		t.Errorf("keyhash --new made %q then %q", keys[0], keys[1])
	}
	ta = newApp(t, "")
	if code := ta.Run(context.Background(), []string{"keyhash", "--new"}); code != ExitOK {
		t.Fatalf("keyhash --new: exit %d", code)
	}
	var k, h string
	if _, err := fmt.Sscanf(ta.stdout.String(), "key: %s\nkey_sha256: %s\n", &k, &h); err != nil || h != digest(k) {
		t.Errorf("keyhash --new printed %q", ta.stdout)
	}
}

func TestKeyhashRefuses(t *testing.T) {
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", nil, "no key on standard input"},
		{"\n", nil, "no key on standard input"},
		{"short", nil, "fewer than 16"},
		{"a key with spaces in it", nil, "holds a space"},
		{"tab\tseparated-key-value", nil, "holds a space"},
		{"ключ-ключ-ключ-ключ", nil, "outside ASCII"},
		{"first-line-of-the-key\nsecond-line", nil, ""},
		{strings.Repeat("k", 5000), nil, "longer than 4096"},
		{"", []string{"cr_secret_on_the_command_line"}, "never on the command line"},
	} {
		ta := newApp(t, tc.stdin)
		code := ta.Run(context.Background(), append([]string{"keyhash"}, tc.args...))
		if tc.want == "" {
			// Only the first line is the key.
			if code != ExitOK || ta.stdout.String() != digest("first-line-of-the-key")+"\n" {
				t.Errorf("two lines: exit %d, %q", code, ta.stdout)
			}
			continue
		}
		if code != ExitUsage || !strings.Contains(ta.stderr.String(), tc.want) || ta.stdout.Len() != 0 {
			t.Errorf("keyhash %v with %q: exit %d, stderr %q; want %d and %q", tc.args, tc.stdin, code, ta.stderr, ExitUsage, tc.want)
		}
	}
}

// TestServeWithKeys: keys from a keys file alone let serve report to a
// control plane; the key works, a wrong one does not, and the request log
// names the key, never showing it.
func TestServeWithKeys(t *testing.T) {
	const key = "cr_serve_test_key_0123456789"
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(keys, []byte("api_keys:\n  - name: ci\n    key_sha256: "+digest(key)+"\n    requests_per_second: 0.001\n    burst: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := newCallbackServer(t)
	ta := newApp(t, "")
	env := map[string]string{
		"CONTROL_PLANE_URL":               cs.URL,
		"INTERNAL_API_TOKEN":              "tok-123",
		"CONTAINER_ID":                    "ctr-k",
		"RESULTS_DIR":                     t.TempDir(),
		"CODERUNNER_SERVER_API_KEYS_FILE": keys,
		"CODERUNNER_SERVER_LOG_LEVEL":     "info",
	}
	ta.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan int, 1)
	go func() {
		done <- ta.Run(ctx, []string{"serve", "--config", filepath.Join("testdata", "fake.yaml"), "--addr", "127.0.0.1:0"})
	}()
	ready := cs.wait(t, "/internal/containers/ctr-k/ready")
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/sessions", int(ready["executor_port"].(float64)))
	get := func(key string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for i, want := range []int{200, 200, 429} {
		if got := get(key); got != want {
			t.Errorf("request %d with the key: %d, want %d", i+1, got, want)
		}
	}
	if got := get(key[:len(key)-1] + "X"); got != 401 {
		t.Errorf("a wrong key: %d", got)
	}
	cancel(httpapi.ExitSIGTERM)
	cs.wait(t, "/internal/containers/ctr-k/exited")
	if code := <-done; code != 143 {
		t.Errorf("serve exited %d; stderr %s", code, ta.stderr)
	}
	logged := ta.stderr.String()
	if !strings.Contains(logged, `"key":"ci"`) || strings.Contains(logged, key) || strings.Contains(logged, key[:12]) {
		t.Errorf("the log does not name the key, or shows it:\n%s", logged)
	}
}
