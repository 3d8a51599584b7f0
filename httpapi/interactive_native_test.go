package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/coderunner/coderunner/execute"
)

// wsNativeOpen dials without a token (the native test server has none)
// and sends the run request.
func wsNativeOpen(t *testing.T, ts *httptest.Server, req map[string]any) *websocket.Conn {
	t.Helper()
	c, _, err := wsDial(t, ts, http.Header{})
	if err != nil {
		t.Fatal(err)
	}
	wsSend(t, c, req)
	return c
}

func resultOf(t *testing.T, last serverMessage) execute.Result {
	t.Helper()
	if last.Type != "result" {
		t.Fatalf("last message %+v, want the result", last)
	}
	var res execute.Result
	if err := json.Unmarshal(last.Result, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

const echoProgram = `import sys
for line in sys.stdin:
    print(line.strip().upper(), flush=True)
print("bye")
`

// TestNativeInteractiveEcho: a real Python program answers each line as
// it comes, the next line sent only once the answer is in; eof ends it.
func TestNativeInteractiveEcho(t *testing.T) {
	ts := nativeStreamServer(t)
	c := wsNativeOpen(t, ts, map[string]any{"language": "python", "code": echoProgram, "timeout": 30})
	for _, line := range []string{"hello", "world", "again"} {
		wsSend(t, c, map[string]any{"type": "stdin", "data": line + "\n"})
		if got := wsUntil(t, c, strings.ToUpper(line)+"\n"); got != strings.ToUpper(line)+"\n" {
			t.Fatalf("stdout %q", got)
		}
	}
	wsSend(t, c, map[string]any{"type": "eof"})
	out, last, status := wsEnd(t, c)
	res := resultOf(t, last)
	if out["stdout"] != "bye\n" || status != websocket.StatusNormalClosure || res.Status != execute.StatusSuccess ||
		res.Stdout != "HELLO\nWORLD\nAGAIN\nbye\n" {
		t.Fatalf("rest %q, close %v, result %+v", out, status, res)
	}
}

// TestNativeInteractiveTimeout: a program left waiting for input is
// stopped at its time limit; the result says so and the close is normal.
func TestNativeInteractiveTimeout(t *testing.T) {
	ts := nativeStreamServer(t)
	c := wsNativeOpen(t, ts, map[string]any{"language": "python", "code": echoProgram, "timeout": 1})
	wsSend(t, c, map[string]any{"type": "stdin", "data": "one\n"})
	wsUntil(t, c, "ONE\n")
	_, last, status := wsEnd(t, c)
	res := resultOf(t, last)
	if status != websocket.StatusNormalClosure || res.Status != execute.StatusTimeout || res.Stdout != "ONE\n" {
		t.Fatalf("close %v, result %+v", status, res)
	}
}

// TestNativeInteractiveOutputCap: output past max_output_chars is
// neither streamed nor kept.
func TestNativeInteractiveOutputCap(t *testing.T) {
	ts := nativeStreamServer(t)
	const limit = 1000
	c := wsNativeOpen(t, ts, map[string]any{"language": "python", "timeout": 20,
		"code": "import sys\nsys.stdout.write('x' * 100000)\n", "limits": map[string]any{"max_output_chars": limit}})
	out, last, status := wsEnd(t, c)
	res := resultOf(t, last)
	if status != websocket.StatusNormalClosure || len(out["stdout"]) > limit || len(res.Stdout) > limit ||
		!res.Truncated || out["stdout"] == "" {
		t.Fatalf("streamed %d bytes, close %v, result status %s truncated %v with %d bytes",
			len(out["stdout"]), status, res.Status, res.Truncated, len(res.Stdout))
	}
}

// processWith reports whether a process's command line holds mark.
func processWith(t *testing.T, mark string) bool {
	t.Helper()
	paths, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), mark) {
			return true
		}
	}
	return false
}

// TestNativeInteractiveClientGone: a client that leaves mid-run leaves
// no process of its program behind.
func TestNativeInteractiveClientGone(t *testing.T) {
	ts := nativeStreamServer(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	mark := "wsmark" + hex.EncodeToString(b[:])
	c := wsNativeOpen(t, ts, map[string]any{"language": "python", "timeout": 60, "args": []string{mark},
		"code": "import time\nprint('ready', flush=True)\ntime.sleep(600)\n"})
	wsUntil(t, c, "ready\n")
	if !processWith(t, mark) {
		t.Fatal("the program's process is not to be seen")
	}
	_ = c.CloseNow()
	// Bounded by the test's deadline, well below the program's time
	// limit: the process must go because the client left.
	deadline := time.Now().Add(30 * time.Second)
	for processWith(t, mark) {
		if time.Now().After(deadline) {
			t.Fatal("the program still runs after its client left")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNativeInteractivePrompt: the prompt of input() comes before the
// answer is sent, as the README's session shows.
func TestNativeInteractivePrompt(t *testing.T) {
	ts := nativeStreamServer(t)
	c := wsNativeOpen(t, ts, map[string]any{"language": "python", "timeout": 30,
		"code": "name = input('name? ')\nprint('hello', name)"})
	if got := wsUntil(t, c, "name? "); got != "name? " {
		t.Fatalf("prompt %q", got)
	}
	wsSend(t, c, map[string]any{"type": "stdin", "data": "Ada\n"})
	out, last, status := wsEnd(t, c)
	res := resultOf(t, last)
	if out["stdout"] != "hello Ada\n" || res.Stdout != "name? hello Ada\n" || status != websocket.StatusNormalClosure {
		t.Fatalf("rest %q, close %v, result %+v", out, status, res)
	}
}
