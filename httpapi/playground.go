package httpapi

import (
	"embed"
	"net/http"
	"strconv"
)

// playgroundFiles are the web playground's page, script and style sheet,
// built into the binary: the page needs no network but the server's own.
//
//go:embed playground/index.html playground/playground.js playground/playground.css
var playgroundFiles embed.FS

// playgroundCSP lets the page load only its own script and style sheet
// and talk only to its own origin. No inline script runs: output put into
// the page as HTML by mistake could still not execute. Images may be
// data: URLs, the form the page shows displayed figures in.
const playgroundCSP = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// playgroundAsset serves one embedded file with its type and the page's
// security headers.
func playgroundAsset(name, contentType string) http.HandlerFunc {
	body, err := playgroundFiles.ReadFile("playground/" + name)
	if err != nil {
		// The embed directive above names every file: a missing one is
		// a broken build.
		panic("httpapi: playground file " + name + " is not embedded")
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		h.Set("Content-Security-Policy", playgroundCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		_, _ = w.Write(body)
	}
}

// languageList is the /v1/languages body.
type languageList struct {
	Languages []string `json:"languages"`
}

func (s *Server) handleLanguages(w http.ResponseWriter, _ *http.Request) {
	ls := s.languages
	if ls == nil {
		ls = []string{}
	}
	writeJSON(w, http.StatusOK, languageList{Languages: ls})
}
