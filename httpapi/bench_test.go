package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkRunOverHTTP is one /v1/run request on a kept-alive loopback
// connection, with a runner that answers at once: the cost of the HTTP
// layer (checks, deadlines, JSON) per request.
func BenchmarkRunOverHTTP(b *testing.B) {
	s, err := New(Options{Executor: newFakeExecutor(), Runner: fakeRunner{}, MaxConcurrent: 4, QueueSize: 10})
	if err != nil {
		b.Fatal(err)
	}
	s.SetReady()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	client := ts.Client()
	const body = `{"language":"python","code":"print(1)"}`
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/run", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
