package config

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCallbackKeys(t *testing.T) {
	const secret = "a-callback-secret-of-some-length"
	c, err := Load("", envOf(map[string]string{
		"CODERUNNER_SERVER_CALLBACK_SECRET":        secret,
		"CODERUNNER_SERVER_CALLBACK_ALLOWED_HOSTS": "127.0.0.1, 10.0.0.0/8 ,hooks.internal",
		"CODERUNNER_SERVER_SUBMISSION_TTL":         "90s",
		"RESULTS_DIR":                              "/var/lib/cr",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Server.CallbackSecret) != secret || c.Server.SubmissionTTL.Std().Seconds() != 90 {
		t.Fatalf("not loaded: %+v", c.Server)
	}
	if got := c.Server.CallbackAllowedHostList(); len(got) != 3 || got[1] != "10.0.0.0/8" {
		t.Fatalf("allowed hosts %q", got)
	}
	if c.CallbackSpool() != "/var/lib/cr/callbacks" {
		t.Fatalf("spool %q", c.CallbackSpool())
	}
	js, _ := json.Marshal(c)
	if strings.Contains(string(js), secret) {
		t.Fatal("the callback secret is shown")
	}
	for _, tc := range []struct{ env, val, want string }{
		{"CODERUNNER_SERVER_CALLBACK_SECRET", "short", "server.callback_secret: shorter than 16"},
		{"CODERUNNER_SERVER_CALLBACK_ALLOWED_HOSTS", "http://x/", "server.callback_allowed_hosts:"},
		{"CODERUNNER_SERVER_CALLBACK_SPOOL_DIR", "rel/dir", "server.callback_spool_dir:"},
		{"CODERUNNER_SERVER_SUBMISSION_TTL", "0s", "server.submission_ttl:"},
		{"CODERUNNER_SERVER_MAX_SUBMISSIONS", "0", "server.max_submissions:"},
		{"CODERUNNER_SERVER_CALLBACK_MAX_RESULT_KB", "1", "server.callback_max_result_kb:"},
		{"CODERUNNER_SERVER_CALLBACK_TIMEOUT", "0s", "server.callback_timeout:"},
		{"CODERUNNER_SERVER_CALLBACK_MAX_AGE", "1s", "server.callback_max_age:"},
	} {
		_, err := Load("", envOf(map[string]string{tc.env: tc.val}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: %v, want %q", tc.env, tc.val, err, tc.want)
		}
	}
}
