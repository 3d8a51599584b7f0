package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/coderunner/coderunner/httpapi"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
)

// findChromium is the path of a Chromium or Chrome binary, or "".
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// artifactDir is where the browser test leaves its screenshots:
// $CODERUNNER_ARTIFACTS when set, else coderunner-artifacts in the
// temporary directory.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CODERUNNER_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "coderunner-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPlaygroundInBrowser drives the playground page in headless
// Chromium against serve on the native backend, with an API token: the
// page asks for the token, runs a Python hello world whose output
// streams in (and whose HTML-looking line stays text), runs an endless
// loop to its timeout with Ctrl+Enter, runs two notebook cells (state
// kept, a written PNG shown) and judges a two-test problem.
func TestPlaygroundInBrowser(t *testing.T) {
	testutil.RequireRoot(t)
	browser := findChromium()
	testutil.Require(t, browser != "", "no chromium found (scripts/install-deps.sh installs it)")
	l, _ := lang.Default().Lookup("python")
	tc := l.Discover(context.Background())
	testutil.Require(t, tc.Available, "python is not available: "+tc.Reason)

	const token = "page-token"
	cs := newCallbackServer(t)
	env := map[string]string{
		"CONTROL_PLANE_URL":    cs.URL,
		"INTERNAL_API_TOKEN":   "cp-token",
		"CONTAINER_ID":         "page-ctr",
		"RESULTS_DIR":          t.TempDir(),
		"CODERUNNER_API_TOKEN": token,
	}
	ta := newApp(t, "")
	ta.Registry = nil // the real backends
	ta.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan int, 1)
	go func() { done <- ta.Run(ctx, []string{"serve", "--backend", "native", "--addr", "127.0.0.1:0"}) }()
	defer func() {
		cancel(httpapi.ExitSIGTERM)
		if code := <-done; code != 143 {
			t.Errorf("serve exited %d, want 143; stderr %s", code, ta.stderr)
		}
	}()
	ready := cs.wait(t, "/internal/containers/page-ctr/ready")
	base := fmt.Sprintf("http://127.0.0.1:%d/", int(ready["executor_port"].(float64)))

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		// Root cannot use Chromium's own sandbox; the page is ours.
		chromedp.NoSandbox,
		chromedp.WindowSize(1200, 1600),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	// The first action starts the browser, on a context without a
	// deadline (a deadline there would end the browser).
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting %s: %v", browser, err)
	}
	// A bound on the whole session, not an assertion on its speed.
	tctx, tcancel := context.WithTimeout(bctx, 3*time.Minute)
	defer tcancel()

	// Any dialog means the page ran code from the output.
	dialogs := make(chan string, 4)
	go func() {
		for ev, err := range chromedp.Events(bctx, page.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			select {
			case dialogs <- ev.Message:
			default:
			}
			_, _ = chromedp.Call(bctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()

	dir := artifactDir(t)
	shot := func(name string) {
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Errorf("screenshot %s: %v", name, err)
			return
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Errorf("screenshot %s: %v", name, err)
			return
		}
		t.Logf("screenshot saved to %s", p)
	}
	defer shot("playground-final.png")

	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(tctx, steps...); err != nil {
			shot("playground-failed.png")
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(tctx, chromedp.TextContent(sel))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(tctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	waitFor := func(js string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(100*time.Millisecond))
	}
	finished := waitFor(`document.getElementById("status").textContent.startsWith("Status: ")`)

	// The token: asked for, then the languages load.
	do("token", chromedp.Navigate(base),
		chromedp.WaitVisible("#token"),
		chromedp.SendKeys("#token", token),
		chromedp.Click("#token-form button"),
		waitFor(`document.querySelector('#language option[value="python"]') !== null`),
		chromedp.SetValue("#language", "python"),
	)
	if got := eval(`sessionStorage.getItem("coderunner.token")`); got != token {
		t.Errorf("the token kept in sessionStorage is %q", got)
	}

	// Hello, with a line that would be an image with a script if it were
	// put into the page as HTML.
	const attack = `<img src=x onerror=alert(1)>`
	do("hello", chromedp.SetValue("#code", "print('Hello')\nprint('"+attack+"')\n"),
		chromedp.SetValue("#timeout", "10"),
		chromedp.Click("#run"),
		finished,
	)
	if status := text("#status"); !strings.HasPrefix(status, "Status: success") {
		t.Errorf("hello status %q", status)
	}
	if output := text("#output"); !strings.Contains(output, "Hello\n") || !strings.Contains(output, attack) {
		t.Errorf("output %q lacks Hello and the attack line as text", output)
	}
	if n := eval(`String(document.querySelectorAll("#output img, #output *:not(span)").length)`); n != "0" {
		t.Errorf("the output holds %s elements other than text spans: printed HTML became markup", n)
	}
	shot("playground-hello.png")

	// An endless loop, run with Ctrl+Enter from the code box.
	do("timeout", chromedp.SetValue("#code", "while True:\n    pass\n"),
		chromedp.SetValue("#timeout", "2"),
		chromedp.Focus("#code"),
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		finished,
	)
	if status := text("#status"); !strings.HasPrefix(status, "Status: timeout") {
		t.Errorf("endless loop status %q, want timeout", status)
	}

	// A notebook: a cell keeps its state for the next, and a PNG file it
	// writes is shown as an image.
	const dot = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	do("notebook cell", chromedp.Click("#notebook"),
		chromedp.SetValue("#timeout", "20"),
		chromedp.SetValue("#code", "import base64\nx = 41\nopen('dot.png', 'wb').write(base64.b64decode('"+dot+"'))\n"),
		chromedp.Click("#run"),
		finished,
	)
	if status := text("#status"); !strings.HasPrefix(status, "Status: success") {
		t.Fatalf("notebook cell status %q, output %q", status, text("#output"))
	}
	do("image", waitFor(`document.querySelector("#display img") !== null && document.querySelector("#display img").complete`))
	if w := eval(`String(document.querySelector("#display img").naturalWidth)`); w != "1" {
		t.Errorf("the displayed image is %s pixels wide, want the 1-pixel PNG", w)
	}
	do("notebook state", chromedp.SetValue("#code", "x + 1\n"), chromedp.Click("#run"), finished)
	if output := text("#output"); !strings.Contains(output, "42") {
		t.Errorf("the next cell showed %q, want 42 (x kept from the cell before)", output)
	}
	do("notebook off", chromedp.Click("#notebook"))

	// Judge the two default tests (1 2 → 3, 5 7 → 12).
	do("judge", chromedp.SetValue("#code", "a, b = map(int, input().split())\nprint(a + b)\n"),
		chromedp.SetValue("#timeout", "10"),
		chromedp.Click("#judge"),
		waitFor(`!document.getElementById("results").hidden`),
	)
	if verdict := text("#verdict"); !strings.Contains(verdict, "all_passed") {
		t.Errorf("verdict %q, want all_passed", verdict)
	}
	rows := eval(`Array.from(document.querySelectorAll("#results tbody tr")).map(r => r.cells[0].textContent + ":" + r.cells[1].textContent).join(",")`)
	if rows != "1:passed,2:passed" {
		t.Errorf("result rows %q, want 1:passed,2:passed", rows)
	}
	select {
	case m := <-dialogs:
		t.Errorf("the page opened a dialog %q: output ran as code", m)
	default:
	}
}
