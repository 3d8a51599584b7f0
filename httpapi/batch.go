package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/coderunner/coderunner/internal/httpguard"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/judge/batch"
)

// ndjsonTypes are the Content-Types a batch may be sent with. None is one
// a web page may send without a CORS preflight, which the server never
// grants.
var ndjsonTypes = map[string]bool{"application/x-ndjson": true, "application/jsonl": true, "application/json": true}

// requireNDJSON refuses, with 415, a batch body that does not say it is
// JSON Lines (or JSON).
func (s *Server) requireNDJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct := r.Header.Get("Content-Type")
		media, params, err := mime.ParseMediaType(ct)
		if cs, ok := params["charset"]; err != nil || !ndjsonTypes[media] || ok && !httpguard.IsJSON("application/json; charset="+cs) {
			writeError(w, r, http.StatusUnsupportedMediaType, CodeUnsupportedMedia,
				fmt.Sprintf("Content-Type %q: send the batch, one judge request per line, with Content-Type: application/x-ndjson", ct))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// batchEnd is the last line of a batch's answer: its summary, or the
// error that stopped it.
type batchEnd struct {
	Summary *batch.Summary `json:"summary,omitempty"`
	Error   *errorDetail   `json:"error,omitempty"`
}

// handleJudgeBatch is POST /v1/judge/batch: one judge request per line of
// the body, one result per line of the answer in the same order, each
// written as soon as it and those before it are judged, then a line with
// the summary. The body is read whole first (at most server.max_body_mb),
// so that a long batch does not depend on the client's sending. A batch
// holds one running slot: its requests are judged one after another,
// each with its tests in parallel.
func (s *Server) handleJudgeBatch(w http.ResponseWriter, r *http.Request) {
	body := s.body(w, r)
	doc, err := io.ReadAll(body)
	if err != nil {
		if !s.tooLarge(w, r, body) {
			writeError(w, r, http.StatusBadRequest, CodeBadRequest, "body: "+err.Error())
		}
		return
	}
	if len(bytes.TrimSpace(doc)) == 0 {
		writeError(w, r, http.StatusBadRequest, CodeBadRequest, "body: empty; send one judge request per line")
		return
	}
	ctx, release, ok := s.clientRun(w, r, s.judge != nil, "/v1/judge/batch")
	if !ok {
		return
	}
	defer release()

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	out := &flushed{w: w, rc: http.NewResponseController(w)}
	judgeOne := func(ctx context.Context, req judge.ExecutionRequest) judge.ExecutionResult {
		start := time.Now()
		res := s.judge.Execute(ctx, req)
		if ctx.Err() == nil {
			reason := ""
			if res.Status != judge.StatusAllPassed {
				reason = string(res.Status)
			}
			s.metrics.finished("judge", string(res.Status), reason, time.Since(start))
		}
		return res
	}
	sum, err := batch.Run(ctx, bytes.NewReader(doc), out, batch.Options{Judge: judgeOne, Workers: 1})
	end := batchEnd{Summary: sum}
	if err != nil {
		// The answer is under way: the error goes on its last line.
		code := CodeInternal
		if ctx.Err() != nil {
			code = CodeShuttingDown
		}
		end = batchEnd{Error: &errorDetail{Code: code, Message: "the batch stopped: " + err.Error(), RequestID: requestID(r.Context())}}
		s.log.Warn("a batch stopped", "event", "batch_stopped", "request_id", requestID(r.Context()), "error", err)
	}
	b, _ := json.Marshal(end)
	_, _ = out.Write(append(b, '\n'))
}

// flushed sends each write to the client at once.
type flushed struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f *flushed) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		_ = f.rc.Flush()
	}
	return n, err
}
