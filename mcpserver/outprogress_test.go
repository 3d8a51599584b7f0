package mcpserver

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/lang"
)

// streamingRunner writes its output to the request's writers, when it
// has them, as the sandbox does while the program runs.
type streamingRunner struct {
	mu      sync.Mutex
	writers []bool // whether each call had writers
}

// streamedOut is what streamingRunner prints: a line on stdout, one on
// stderr, then more stdout than a notification carries.
var streamedOut = []struct{ stream, text string }{
	{"stdout", "héllo\n"},
	{"stderr", "warning: €\n"},
	{"stdout", strings.Repeat("é", 10000) + "\n"},
}

func (r *streamingRunner) Execute(_ context.Context, req execute.Request) (*execute.Result, error) {
	r.mu.Lock()
	r.writers = append(r.writers, req.Stdout != nil && req.Stderr != nil)
	r.mu.Unlock()
	res := &execute.Result{Status: execute.StatusSuccess, Language: req.Language, Backend: "fake"}
	for _, o := range streamedOut {
		w, field := req.Stdout, &res.Stdout
		if o.stream == "stderr" {
			w, field = req.Stderr, &res.Stderr
		}
		*field += o.text
		if w != nil {
			// A piece at a time, as a pipe delivers it, cutting characters.
			for i := 0; i < len(o.text); i += 333 {
				_, _ = io.WriteString(w, o.text[i:min(i+333, len(o.text))])
			}
		}
	}
	return res, nil
}

// TestExecuteCodeStreamsProgress: a call with a progress token gets the
// program's output as progress notifications, on every transport: each
// message a bounded chunk of whole characters, _meta.stream naming its
// stream, progress growing; joined they are the output. A call without
// one streams nothing.
func TestExecuteCodeStreamsProgress(t *testing.T) {
	sr := &streamingRunner{}
	s, err := New(Options{Runner: sr, Languages: lang.Default(), Engine: fakeEngine{newFakeRunner()}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var want [2]int
	for _, o := range streamedOut {
		if o.stream == "stdout" {
			want[0] += len(o.text)
		} else {
			want[1] += len(o.text)
		}
	}
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			var mu sync.Mutex
			var got []*mcp.ProgressNotificationParams
			cs := connect(t, s, tr, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				mu.Lock()
				got = append(got, req.Params)
				mu.Unlock()
			}})
			params := &mcp.CallToolParams{Name: ToolExecuteCode, Arguments: map[string]any{"language": "python", "code": "x"}}
			params.SetProgressToken("run-1")
			res, err := cs.CallTool(context.Background(), params)
			if err != nil || res.IsError {
				t.Fatalf("call: %v %s", err, text(res))
			}
			var stdout, stderr strings.Builder
			// Notifications may still be in flight when the result comes.
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				mu.Lock()
				stdout.Reset()
				stderr.Reset()
				for _, p := range got {
					if p.GetMeta()["stream"] == "stderr" {
						stderr.WriteString(p.Message)
					} else {
						stdout.WriteString(p.Message)
					}
				}
				mu.Unlock()
				if stdout.Len() >= want[0] && stderr.Len() >= want[1] || time.Now().After(deadline) {
					break
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if stdout.String() != streamedOut[0].text+streamedOut[2].text || stderr.String() != streamedOut[1].text {
				t.Fatalf("notifications carried stdout %d bytes, stderr %q", stdout.Len(), stderr.String())
			}
			last := 0.0
			for i, p := range got {
				if p.ProgressToken != "run-1" || p.Progress <= last || len(p.Message) > maxProgressChunk || !utf8.ValidString(p.Message) {
					t.Errorf("notification %d: token %v progress %g (after %g), %d bytes", i, p.ProgressToken, p.Progress, last, len(p.Message))
				}
				if s := p.GetMeta()["stream"]; s != "stdout" && s != "stderr" {
					t.Errorf("notification %d: _meta.stream %v", i, s)
				}
				last = p.Progress
			}
			if len(got) < 3 || got[0].Message != "héllo\n" {
				t.Errorf("%d notifications, the first %q", len(got), got[0].Message)
			}
		})
	}
	call(t, connect(t, s, "memory", nil), ToolExecuteCode, map[string]any{"language": "python", "code": "x"})
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if n := len(sr.writers); n != len(transports)+1 || sr.writers[n-1] {
		t.Errorf("writers given %v: want them for the calls with a token only", sr.writers)
	}
}
