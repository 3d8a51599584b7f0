package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/callback"
	"github.com/coderunner/coderunner/httpapi"
)

// TestServeCallbacks: serve takes the callback keys from its environment:
// a judge request with a callback_url is answered 202, its result
// reaches a receiver on loopback (allowed by
// server.callback_allowed_hosts) signed with server.callback_secret, and
// the secret never reaches the log.
func TestServeCallbacks(t *testing.T) {
	const secret = "callback-secret-0123456789"
	type delivery struct {
		body   []byte
		header http.Header
	}
	got := make(chan delivery, 4)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- delivery{b, r.Header.Clone()}
	}))
	defer recv.Close()

	cs := newCallbackServer(t)
	results := t.TempDir()
	ta := newApp(t, "")
	env := map[string]string{
		"CONTROL_PLANE_URL":                        cs.URL,
		"INTERNAL_API_TOKEN":                       "tok-123",
		"CONTAINER_ID":                             "ctr-cb",
		"RESULTS_DIR":                              results,
		"CODERUNNER_API_TOKEN":                     "api-token",
		"CODERUNNER_SERVER_CALLBACK_SECRET":        secret,
		"CODERUNNER_SERVER_CALLBACK_ALLOWED_HOSTS": "127.0.0.1",
	}
	ta.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan int, 1)
	go func() {
		done <- ta.Run(ctx, []string{"serve", "--config", filepath.Join("testdata", "fake.yaml"), "--addr", "127.0.0.1:0"})
	}()
	ready := cs.wait(t, "/internal/containers/ctr-cb/ready")
	port := int(ready["executor_port"].(float64))

	body := fmt.Sprintf(`{"request_id":"cb-1","language":"python","code":"print(1)","test_cases":[{"id":"a","expected_output":"1"}],"callback_url":%q}`, recv.URL+"/hook")
	req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/v1/judge", port), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer api-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var st httpapi.SubmissionStatus
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || err != nil || st.SubmissionID == "" {
		t.Fatalf("POST: %d %+v %v", resp.StatusCode, st, err)
	}
	var d delivery
	select {
	case d = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery")
	}
	if err := callback.VerifySignature([]byte(secret), d.header.Get(callback.SignatureHeader), d.body, time.Minute); err != nil {
		t.Fatalf("signature: %v", err)
	}
	var res map[string]any
	if err := json.Unmarshal(d.body, &res); err != nil || res["request_id"] != "cb-1" || d.header.Get(callback.SubmissionHeader) != st.SubmissionID {
		t.Fatalf("delivery %s %v: %v", d.body, d.header, err)
	}
	if fi, err := os.Stat(filepath.Join(results, "callbacks")); err != nil || !fi.IsDir() {
		t.Fatalf("the callback spool is not RESULTS_DIR/callbacks: %v", err)
	}
	cancel(httpapi.ExitSIGTERM)
	if code := <-done; code != 143 {
		t.Errorf("serve exited %d; stderr %s", code, ta.stderr)
	}
	if strings.Contains(ta.stderr.String(), secret) {
		t.Error("the callback secret is in the log")
	}
}
