package httpapi

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestPlaygroundAssets checks that the page, its script and its style
// sheet are served with their types and the headers that keep a
// browser from running anything but the server's own script.
func TestPlaygroundAssets(t *testing.T) {
	s, _ := newTestServer(t, nil)
	for _, tc := range []struct{ path, ctype, holds string }{
		{"/", "text/html; charset=utf-8", `<script src="/playground.js"`},
		{"/playground.js", "text/javascript; charset=utf-8", `"use strict"`},
		{"/playground.css", "text/css; charset=utf-8", "font-family"},
	} {
		rec := do(t, s, http.MethodGet, tc.path, "", nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", tc.path, rec.Code, rec.Body)
		}
		h := rec.Header()
		if got := h.Get("Content-Type"); got != tc.ctype {
			t.Errorf("GET %s: Content-Type %q, want %q", tc.path, got, tc.ctype)
		}
		if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q, want nosniff", tc.path, got)
		}
		checkCSP(t, tc.path, h.Get("Content-Security-Policy"))
		if !strings.Contains(rec.Body.String(), tc.holds) {
			t.Errorf("GET %s: body lacks %q", tc.path, tc.holds)
		}
		if rec := do(t, s, http.MethodPost, tc.path, "{}", nil); rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: %d, want 405", tc.path, rec.Code)
		}
	}
	// The page's pattern is the root alone: other paths stay unknown.
	if rec := do(t, s, http.MethodGet, "/index.html", "", nil); rec.Code != http.StatusNotFound {
		t.Errorf("GET /index.html: %d, want 404", rec.Code)
	}
}

// checkCSP fails unless the policy allows scripts from the server alone:
// no inline script, no eval, no other origin.
func checkCSP(t *testing.T, path, csp string) {
	t.Helper()
	directives := map[string]string{}
	for _, d := range strings.Split(csp, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	if directives["default-src"] != "'none'" {
		t.Errorf("GET %s: CSP default-src %q, want 'none'", path, directives["default-src"])
	}
	if directives["script-src"] != "'self'" {
		t.Errorf("GET %s: CSP script-src %q, want only 'self' (no inline script, no eval)", path, directives["script-src"])
	}
	if directives["connect-src"] != "'self'" {
		t.Errorf("GET %s: CSP connect-src %q, want 'self'", path, directives["connect-src"])
	}
	if directives["frame-ancestors"] != "'none'" {
		t.Errorf("GET %s: CSP frame-ancestors %q, want 'none'", path, directives["frame-ancestors"])
	}
	if strings.Contains(csp, "unsafe") || strings.Contains(csp, "*") {
		t.Errorf("GET %s: CSP %q allows unsafe or wildcard sources", path, csp)
	}
}

// TestPlaygroundPageHasNoInlineCode checks the page itself: every script
// is an external file and no element carries an event handler or inline
// style, which the policy would block (and which would be a way in).
func TestPlaygroundPageHasNoInlineCode(t *testing.T) {
	page, err := playgroundFiles.ReadFile("playground/index.html")
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	scripts := regexp.MustCompile(`(?is)<script([^>]*)>(.*?)</script>`).FindAllStringSubmatch(html, -1)
	if len(scripts) == 0 {
		t.Fatal("the page loads no script")
	}
	for _, m := range scripts {
		if !strings.Contains(m[1], `src="/playground.js"`) || strings.TrimSpace(m[2]) != "" {
			t.Errorf("inline or foreign script: %q", m[0])
		}
	}
	if m := regexp.MustCompile(`(?i)\son[a-z]+\s*=|\sstyle\s*=|javascript:`).FindString(html); m != "" {
		t.Errorf("the page has inline code: %q", m)
	}
	// Every form control has a label, by <label for> or aria-label.
	for _, m := range regexp.MustCompile(`<(?:textarea|select|input)[^>]*\sid="([^"]+)"`).FindAllStringSubmatch(html, -1) {
		if !strings.Contains(html, `for="`+m[1]+`"`) {
			t.Errorf("control #%s has no label", m[1])
		}
	}
}

// TestPlaygroundScriptWritesText checks that the script never parses
// text as HTML or code: output a program prints (say
// "<img src=x onerror=alert(1)>") must land in the page as text.
func TestPlaygroundScriptWritesText(t *testing.T) {
	js, err := playgroundFiles.ReadFile("playground/playground.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "DOMParser", "createContextualFragment", "localStorage"} {
		if strings.Contains(string(js), bad) {
			t.Errorf("playground.js uses %s", bad)
		}
	}
	if !strings.Contains(string(js), "textContent") {
		t.Error("playground.js does not write text with textContent")
	}
}

// TestPlaygroundGuarded attacks the page the way another site can: under
// a name that resolves to the loopback listener (DNS rebinding). The page
// and the languages list must be refused like every other route.
func TestPlaygroundGuarded(t *testing.T) {
	s, _ := newTestServer(t, func(o *Options) { o.Languages = []string{"python"} })
	for _, path := range []string{"/", "/playground.js", "/playground.css", "/v1/languages"} {
		rec := doAt(t, s, loopbackAddr, "evil.example:8080", http.MethodGet, path, "", nil)
		if rec.Code != http.StatusForbidden {
			t.Errorf("GET %s as evil.example: %d, want 403", path, rec.Code)
		}
		if rec.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("GET %s: CORS header %q", path, rec.Header().Get("Access-Control-Allow-Origin"))
		}
		rec = doAt(t, s, loopbackAddr, "127.0.0.1:8080", http.MethodGet, path, "", map[string]string{"Origin": "http://evil.example"})
		if rec.Code != http.StatusForbidden {
			t.Errorf("GET %s from Origin evil.example: %d, want 403", path, rec.Code)
		}
		rec = doAt(t, s, loopbackAddr, "127.0.0.1:8080", http.MethodGet, path, "", nil)
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s as 127.0.0.1: %d, want 200", path, rec.Code)
		}
	}
}

// TestLanguagesEndpoint checks the list the page's choice is filled
// from, and that it needs the token when one is set while the page does
// not (the page asks for the token).
func TestLanguagesEndpoint(t *testing.T) {
	s, _ := newTestServer(t, func(o *Options) {
		o.Languages = []string{"c", "python"}
		o.APIToken = "s3cret"
	})
	if rec := do(t, s, http.MethodGet, "/v1/languages", "", nil); rec.Code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d, want 401", rec.Code)
	}
	if rec := do(t, s, http.MethodGet, "/", "", nil); rec.Code != http.StatusOK {
		t.Fatalf("the page without the token: %d, want 200", rec.Code)
	}
	rec := do(t, s, http.MethodGet, "/v1/languages", "", map[string]string{"Authorization": "Bearer s3cret"})
	if rec.Code != http.StatusOK {
		t.Fatalf("with the token: %d %s", rec.Code, rec.Body)
	}
	var got languageList
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Languages, ",") != "c,python" {
		t.Errorf("languages %q, want c,python", got.Languages)
	}
	if rec := do(t, s, http.MethodDelete, "/v1/languages", "", map[string]string{"Authorization": "Bearer s3cret"}); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %d, want 405", rec.Code)
	}

	// No languages configured: an empty list, not null.
	s, _ = newTestServer(t, nil)
	rec = do(t, s, http.MethodGet, "/v1/languages", "", nil)
	if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"languages":[]}` {
		t.Errorf("no languages: %d %s", rec.Code, rec.Body)
	}
}
