package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/coderunner/coderunner/lang"
)

var lineSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python"}}}`,
	`{"jsonrpc":"2.0","id":"a","method":""}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":7,"result":{"x":1}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}`,
	`{"jsonrpc":"1.0","id":1,"method":"x"}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"2.0","id":[1],"method":"x"}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	`[]`, `{`, `null`,
}

// FuzzDecodeLine checks that LineTransport decodes every line as the SDK
// does: the same messages, and an error where the SDK gives one.
func FuzzDecodeLine(f *testing.F) {
	for _, s := range lineSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '[' || bytes.Count(line, []byte("{")) > 100 || hasFoldedKey(line) {
			return
		}
		if !json.Valid(line) {
			// The SDK's decoder reads the first value and ignores what
			// follows it (`{…}0`); refusing such a line is safe.
			if _, err := decodeLine(line); err == nil {
				t.Fatalf("%q is not one JSON value, and was decoded", line)
			}
			return
		}
		got, err := decodeLine(line)
		want, wantErr := jsonrpc.DecodeMessage(line)
		if wantErr != nil {
			return // the SDK's decoder is more lenient in places; refusing is safe
		}
		if err != nil {
			t.Fatalf("%q: %v; the SDK decodes it", line, err)
		}
		if !reflect.DeepEqual(got[0], want) {
			t.Fatalf("%q: decoded %#v, the SDK %#v", line, got[0], want)
		}
	})
}

func TestDecodeLineRefuses(t *testing.T) {
	for _, s := range []string{`{"jsonrpc":"1.0","id":1,"method":"x"}`, `{"jsonrpc":"2.0","result":{}}`, `[]`, `{`, `{"jsonrpc":"2.0","id":[1],"method":"x"}`} {
		if _, err := decodeLine([]byte(s)); err == nil {
			t.Errorf("%s decoded", s)
		}
	}
	msgs, err := decodeLine([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"}]`))
	if err != nil || len(msgs) != 2 {
		t.Errorf("batch: %d messages, %v", len(msgs), err)
	}
}

// blockingReader blocks every Read until released, as a terminal's
// stdin does: closing it does not wake a Read.
type blockingReader struct{ release chan struct{} }

func (r blockingReader) Read([]byte) (int, error) {
	<-r.release
	return 0, io.EOF
}

func (blockingReader) Close() error { return nil }

// TestLineTransportReaders serves a session over each kind of reader,
// answers a ping through it, and checks that closing the session ends it
// even while a Read waits for input that does not come: a pollable pipe
// and an io.Pipe are read in the SDK's goroutine, and the blocking reader
// by a goroutine of its own.
func TestLineTransportReaders(t *testing.T) {
	s, err := New(Options{Runner: newFakeRunner(), Languages: lang.Default()})
	if err != nil {
		t.Fatal(err)
	}
	osPipe := func() (io.ReadCloser, io.WriteCloser) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		return r, w
	}
	ioPipe := func() (io.ReadCloser, io.WriteCloser) { return io.Pipe() }
	for _, tc := range []struct {
		name          string
		pipe          func() (io.ReadCloser, io.WriteCloser)
		interruptible bool
	}{
		{"os.Pipe", osPipe, true},
		{"io.Pipe", ioPipe, true},
		{"blocking", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in io.ReadCloser
			var send io.WriteCloser
			release := make(chan struct{})
			defer close(release)
			if tc.pipe != nil {
				in, send = tc.pipe()
				defer send.Close()
			} else {
				in = blockingReader{release}
			}
			if got := interruptible(in); got != tc.interruptible {
				t.Fatalf("interruptible = %v", got)
			}
			outR, outW := io.Pipe()
			ss, err := s.MCP().Connect(context.Background(), &LineTransport{Reader: in, Writer: outW}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if send != nil {
				answers := bufio.NewReader(outR)
				for _, line := range []string{
					`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
					`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
				} {
					if _, err := io.WriteString(send, line+"\n"); err != nil {
						t.Fatal(err)
					}
					answer, err := answers.ReadString('\n')
					if err != nil || !strings.Contains(answer, `"result"`) {
						t.Fatalf("answer %q, %v", answer, err)
					}
				}
			}
			// Nothing more comes: Close must end the Read that waits.
			closed := make(chan error, 1)
			go func() { closed <- ss.Close() }()
			select {
			case <-closed:
			case <-time.After(10 * time.Second):
				t.Fatal("closing the session did not end it while a Read waited")
			}
			go func() { _, _ = io.Copy(io.Discard, outR) }()
		})
	}
}

// TestLineTransportAnswersBeforeEOF writes a session's requests and ends
// the input at once, as coderunner mcp < requests.jsonl does: every call
// read before the end is answered, one still running when the input ends
// included, and a line that is not JSON-RPC is answered with an error
// without ending the session. The last line has no newline.
func TestLineTransportAnswersBeforeEOF(t *testing.T) {
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`not json`,
		`{"id":9,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"gated"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"judge_code","arguments":{"language":"python","code":"print 1","test_cases":[{"input":"","expected_output":"1"}]}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print hi"}}}`,
	}, "\n")
	osPipe := func() (io.ReadCloser, io.WriteCloser) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		return r, w
	}
	ioPipe := func() (io.ReadCloser, io.WriteCloser) { return io.Pipe() }
	for _, tc := range []struct {
		name string
		pipe func() (io.ReadCloser, io.WriteCloser)
	}{
		{"os.Pipe", osPipe},
		{"io.Pipe", ioPipe},
		{"file", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, fr := newServer(t)
			var in io.ReadCloser
			if tc.pipe != nil {
				r, w := tc.pipe()
				go func() {
					_, _ = io.WriteString(w, input)
					_ = w.Close()
				}()
				in = r
			} else {
				in = io.NopCloser(strings.NewReader(input))
			}
			outR, outW := io.Pipe()
			ran := make(chan error, 1)
			go func() {
				ran <- s.Run(context.Background(), &LineTransport{Reader: in, Writer: outW})
				_ = outW.Close()
			}()
			lines := make(chan []string, 1)
			go func() {
				var got []string
				sc := bufio.NewScanner(outR)
				sc.Buffer(nil, 1<<20)
				for sc.Scan() {
					got = append(got, sc.Text())
				}
				lines <- got
			}()
			// The gated call runs while the input has ended; only then is
			// it let go.
			select {
			case <-fr.started:
			case <-time.After(10 * time.Second):
				t.Fatal("the gated call did not start")
			}
			close(fr.gate)
			answers := map[string]string{}
			var refusals []string
			for _, line := range <-lines {
				var m struct {
					ID     json.RawMessage `json:"id"`
					Result json.RawMessage `json:"result"`
				}
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("answer %q: %v", line, err)
				}
				if string(m.ID) == "null" {
					refusals = append(refusals, line)
					continue
				}
				answers[string(m.ID)] = string(m.Result)
			}
			select {
			case err := <-ran:
				if err != nil && !errors.Is(err, io.EOF) {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the session did not end after the input did")
			}
			for _, id := range []string{"1", "2", "3", "4", "5"} {
				if answers[id] == "" {
					t.Errorf("request %s not answered (answers %v)", id, answers)
				}
			}
			if !strings.Contains(answers["3"], `gated`) || !strings.Contains(answers["5"], `hi`) {
				t.Errorf("execute_code answers: %s / %s", answers["3"], answers["5"])
			}
			if len(refusals) != 2 || !strings.Contains(refusals[0], `-32700`) || !strings.Contains(refusals[1], `-32600`) {
				t.Errorf("refusals of the bad lines: %q", refusals)
			}
		})
	}
}
