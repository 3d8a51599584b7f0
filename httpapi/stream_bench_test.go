package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/execute"
)

// benchOutputs are the programs BenchmarkStreamingCost runs: one that
// prints a line, one that prints a megabyte in one write.
var benchOutputs = []struct{ name, code, out string }{
	{"trivial", "print('Hello, World!')", "Hello, World!\n"},
	{"1MB", "import sys\nsys.stdout.write('x' * 1048575 + '\\n')", strings.Repeat("x", 1048575) + "\n"},
}

// BenchmarkStreamingCost is what streaming adds to a run's total: each
// iteration runs the same program once answered as JSON and once as an
// event stream, in turn, so that the machine's load hits both alike, and
// reports the median and 95th percentile of each, in ms from the request
// to the answer's last byte. On "native" the programs run in the native
// sandbox (root); on "layer" a runner writes their output at once, which
// leaves the HTTP layer's own cost without the sandbox's noise. Run it
// with -benchtime=200x (make bench-stream).
func BenchmarkStreamingCost(b *testing.B) {
	for _, w := range benchOutputs {
		b.Run("layer/"+w.name, func(b *testing.B) {
			s, err := New(Options{Executor: newFakeExecutor(), Runner: runnerFunc(func(_ context.Context, req execute.Request) (*execute.Result, error) {
				if req.Stdout != nil {
					// In the pieces a pipe gives.
					for i := 0; i < len(w.out); i += 64 << 10 {
						_, _ = io.WriteString(req.Stdout, w.out[i:min(i+64<<10, len(w.out))])
					}
				}
				return runResult(req, w.out, ""), nil
			}), MaxConcurrent: 2, QueueSize: 10})
			if err != nil {
				b.Fatal(err)
			}
			s.SetReady()
			ts := httptest.NewServer(s.Handler())
			defer ts.Close()
			streamingCost(b, ts, w.code)
		})
		b.Run("native/"+w.name, func(b *testing.B) {
			streamingCost(b, nativeStreamServer(b), w.code)
		})
	}
}

func streamingCost(b *testing.B, ts *httptest.Server, code string) {
	body, _ := json.Marshal(map[string]any{"language": "python", "code": code, "timeout": 30,
		"limits": map[string]any{"max_output_chars": 2 << 20}})
	client := ts.Client()
	once := func(accept string) time.Duration {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/run", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		took := time.Since(start)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(data), `"status":"success"`) {
			b.Fatalf("answer %d %v: %.300s", resp.StatusCode, err, data)
		}
		return took
	}
	once("")
	once("text/event-stream")
	var plain, streamed []time.Duration
	for b.Loop() {
		plain = append(plain, once(""))
		streamed = append(streamed, once("text/event-stream"))
	}
	report := func(name string, d []time.Duration) {
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2])/1e6, name+"-p50-ms")
		b.ReportMetric(float64(d[len(d)*95/100])/1e6, name+"-p95-ms")
	}
	report("json", plain)
	report("sse", streamed)
	b.ReportMetric(0, "ns/op")
}
