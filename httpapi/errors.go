package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Error codes of the error body.
const (
	CodeBadRequest         = "bad_request"
	CodeUnauthorized       = "unauthorized"
	CodeForbidden          = "forbidden"
	CodeUnsupportedMedia   = "unsupported_media_type"
	CodeRequestTimeout     = "request_timeout"
	CodeNotFound           = "not_found"
	CodeMethodNotAllowed   = "method_not_allowed"
	CodePayloadTooLarge    = "payload_too_large"
	CodeQueueFull          = "queue_full"
	CodeShuttingDown       = "shutting_down"
	CodeUnavailable        = "unavailable"
	CodeInternal           = "internal_error"
	CodeValidation         = "validation_error"
	CodeTooManySessions    = "too_many_sessions"
	CodeRateLimited        = "rate_limited"
	CodeConcurrencyLimited = "concurrency_limited"
	CodeSessionExpired     = "session_expired"
	CodeStorageFull        = "insufficient_storage"
	retryAfterQueueSeconds = 1
)

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
	// Limit names the limit a 429 hit (LimitRate, LimitConcurrency,
	// LimitSessions, LimitServerSessions).
	Limit string `json:"limit,omitempty"`
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Every value written here is a plain struct; this cannot happen
		// unless a float is NaN, and the answer must still be JSON.
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"internal_error","message":"unable to encode the answer","request_id":""}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// writeError answers with the error body.
func writeError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	switch status {
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterQueueSeconds))
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="coderunner"`)
	}
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: msg, RequestID: requestID(r.Context())}})
}
