package httpapi

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestJudgeBatchEndpoint(t *testing.T) {
	s, _ := newTestServer(t, func(o *Options) { o.MaxBodyBytes = 1 << 10 })
	body := strings.Join([]string{
		`{"request_id":"a","problem_id":"p","language":"python","code":"print(1)","test_cases":[{"expected_output":"1"}]}`,
		``,
		`{"request_id":"b","language":"python","code":"print(1)","test_cases":[{"expected_output":"1"}],"source_code":"x"}`,
		`{"request_id":"c","problem_id":"p","language":"python","code":"print(1)","test_cases":[{"expected_output":"1"}]}`,
	}, "\n")
	rec := do(t, s, "POST", "/v1/judge/batch", body, map[string]string{"Content-Type": "application/x-ndjson"})
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("%d %s: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), rec.Body)
	}
	for i, want := range []struct {
		line          int
		id, status    string
		errorContains string
	}{{1, "a", "all_passed", ""}, {3, "b", "sandbox_error", "source_code: unknown field"}, {4, "c", "all_passed", ""}} {
		var r struct {
			Line      int    `json:"line"`
			RequestID string `json:"request_id"`
			Status    string `json:"status"`
			ErrorInfo *struct {
				Message string `json:"message"`
			} `json:"error_info"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
			t.Fatal(err)
		}
		if r.Line != want.line || r.RequestID != want.id || r.Status != want.status ||
			want.errorContains != "" && (r.ErrorInfo == nil || !strings.Contains(r.ErrorInfo.Message, want.errorContains)) {
			t.Errorf("line %d: %s", i+1, lines[i])
		}
	}
	var end struct {
		Summary struct {
			Judged  int                `json:"judged"`
			Passed  int                `json:"passed"`
			PassAtK map[string]float64 `json:"pass_at_k"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(lines[3]), &end); err != nil || end.Summary.Judged != 3 || end.Summary.Passed != 2 || end.Summary.PassAtK["1"] != 1 {
		t.Errorf("summary line %s (%v)", lines[3], err)
	}

	for _, tc := range []struct {
		name, method, ct, body string
		status                 int
		code                   string
	}{
		{"plain text", "POST", "text/plain", body, 415, CodeUnsupportedMedia},
		{"form", "POST", "application/x-www-form-urlencoded", body, 415, CodeUnsupportedMedia},
		{"empty", "POST", "application/x-ndjson", "\n \n", 400, CodeBadRequest},
		{"too large", "POST", "application/x-ndjson", strings.Repeat(body+"\n", 10), 413, CodePayloadTooLarge},
		{"GET", "GET", "", "", 405, CodeMethodNotAllowed},
	} {
		rec := do(t, s, tc.method, "/v1/judge/batch", tc.body, map[string]string{"Content-Type": tc.ct})
		if rec.Code != tc.status || errOf(t, rec).Code != tc.code {
			t.Errorf("%s: %d %s", tc.name, rec.Code, rec.Body)
		}
	}
	// JSON is accepted as well as JSON Lines.
	if rec := do(t, s, "POST", "/v1/judge/batch", body, map[string]string{"Content-Type": "application/json"}); rec.Code != 200 {
		t.Errorf("application/json: %d %s", rec.Code, rec.Body)
	}
}

// TestJudgeBatchNeedsToken: a batch is refused without the token, like
// every endpoint that runs code.
func TestJudgeBatchNeedsToken(t *testing.T) {
	s, _ := newTestServer(t, func(o *Options) { o.APIToken = "secret-token-0123456789" })
	req := httptest.NewRequest("POST", "/v1/judge/batch", strings.NewReader(`{"code":"x"}`))
	req.Header.Set("Content-Type", "application/x-ndjson")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != 401 {
		t.Errorf("without the token: %d %s", rec.Code, rec.Body)
	}
}
