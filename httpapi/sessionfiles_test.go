package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/session"
)

func fileStore(t *testing.T, opts session.Options) *session.Store {
	t.Helper()
	opts.Dir, opts.NoTmpfs = t.TempDir(), true
	store, err := session.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// workspace is the directory of session id, for planting what a run
// could leave there.
func workspace(t *testing.T, store *session.Store, id string) string {
	t.Helper()
	l, err := store.Acquire(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	return l.Dir()
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestSessionFilesEndpoints(t *testing.T) {
	store := fileStore(t, session.Options{MaxFileBytes: 1024})
	s, _ := newTestServer(t, func(o *Options) { o.Sessions = store; o.Runner = store.Wrap(fakeRunner{}) })
	bin := "\x00\x01\xff\xfebinary\r\n"

	// Reading a session that does not exist does not start it.
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1/sessions/s/files"}, {"GET", "/v1/sessions/s/files/a.txt"}, {"DELETE", "/v1/sessions/s/files/a.txt"},
	} {
		rec := do(t, s, tc.method, tc.path, "", nil)
		if e := errOf(t, rec); rec.Code != 404 || e.Code != CodeNotFound || !strings.HasPrefix(e.Message, "id: ") {
			t.Errorf("%s %s: %d %+v", tc.method, tc.path, rec.Code, e)
		}
	}
	if store.Len() != 0 {
		t.Fatal("a read started a session")
	}

	rec := do(t, s, "PUT", "/v1/sessions/s/files/data/in.bin", bin, map[string]string{"Content-Type": "application/octet-stream"})
	var f session.File
	if err := json.Unmarshal(rec.Body.Bytes(), &f); rec.Code != 200 || err != nil ||
		f != (session.File{Path: "data/in.bin", Size: int64(len(bin)), SHA256: digest(bin)}) {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	rec = do(t, s, "GET", "/v1/sessions/s/files/data/in.bin", "", nil)
	if rec.Code != 200 || rec.Body.String() != bin || rec.Header().Get("Content-Type") != "application/octet-stream" ||
		rec.Header().Get("Content-Length") != strconv.Itoa(len(bin)) || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("GET: %d %q %v", rec.Code, rec.Body, rec.Header())
	}
	rec = do(t, s, "HEAD", "/v1/sessions/s/files/data/in.bin", "", nil)
	if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") != strconv.Itoa(len(bin)) {
		t.Fatalf("HEAD: %d %q %v", rec.Code, rec.Body, rec.Header())
	}
	do(t, s, "PUT", "/v1/sessions/s/files/b.txt", "text", nil)
	rec = do(t, s, "GET", "/v1/sessions/s/files", "", nil)
	var list []session.File
	if err := json.Unmarshal(rec.Body.Bytes(), &list); rec.Code != 200 || err != nil || len(list) != 2 ||
		list[0].Path != "b.txt" || list[0].SHA256 != digest("text") || list[1].Path != "data/in.bin" {
		t.Fatalf("list: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, s, "DELETE", "/v1/sessions/s/files/b.txt", "", nil); rec.Code != 204 {
		t.Fatalf("DELETE: %d %s", rec.Code, rec.Body)
	}
	rec = do(t, s, "GET", "/v1/sessions/s/files/b.txt", "", nil)
	if e := errOf(t, rec); rec.Code != 404 || e.Code != CodeNotFound || !strings.HasPrefix(e.Message, "path: ") || !strings.Contains(e.Message, "b.txt") {
		t.Fatalf("GET after DELETE: %d %+v", rec.Code, e)
	}
	if rec := do(t, s, "DELETE", "/v1/sessions/s/files/data", "", nil); rec.Code != 409 || errOf(t, rec).Code != CodeConflict {
		t.Fatalf("DELETE of a directory: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, s, "PUT", "/v1/sessions/s/files/data", "x", nil); rec.Code != 409 {
		t.Fatalf("PUT over a directory: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, s, "POST", "/v1/sessions/s/files/data", "x", nil); rec.Code != 405 || !strings.Contains(rec.Header().Get("Allow"), "PUT") {
		t.Fatalf("POST: %d %v", rec.Code, rec.Header())
	}
}

// Every rule of a path is attacked: the request never reaches beyond the
// workspace.
func TestSessionFilesBadPaths(t *testing.T) {
	store := fileStore(t, session.Options{})
	s, _ := newTestServer(t, func(o *Options) { o.Sessions = store; o.Runner = store.Wrap(fakeRunner{}) })
	for _, p := range []string{
		"%2E%2E", "a%2F..%2F..%2Fetc%2Fpasswd", "%2E%2E%2Fx", "%2Fetc%2Fpasswd", "a%00b", "a%0Ab", "a%5Cb",
		"a%2F.%2Fb", "a%2F%2Fb", "a%2F", strings.Repeat("d/", 16) + "f", strings.Repeat("n", 256),
	} {
		for _, m := range []string{"PUT", "GET", "DELETE"} {
			rec := do(t, s, m, "/v1/sessions/s/files/"+p, "pwned", nil)
			if e := errOf(t, rec); rec.Code != 400 || !strings.HasPrefix(e.Message, "path: ") {
				t.Errorf("%s %q: %d %+v", m, p, rec.Code, e)
			}
		}
	}
	for _, m := range []string{"PUT", "GET"} {
		if rec := do(t, s, m, "/v1/sessions/bad.id/files/a", "", nil); rec.Code != 400 || !strings.HasPrefix(errOf(t, rec).Message, "id: ") {
			t.Errorf("%s with a bad id: %d %s", m, rec.Code, rec.Body)
		}
	}
	if store.Len() != 0 {
		t.Fatal("a refused request started a session")
	}
}

// What a run planted in the workspace is never followed, nor blocks the
// server.
func TestSessionFilesPlanted(t *testing.T) {
	store := fileStore(t, session.Options{})
	s, _ := newTestServer(t, func(o *Options) { o.Sessions = store; o.Runner = store.Wrap(fakeRunner{}) })
	dir := workspace(t, store, "s")
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	for _, err := range []error{
		os.WriteFile(secret, []byte("host secret"), 0o600),
		os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")),
		os.Symlink(secret, filepath.Join(dir, "secret")),
		os.Symlink(outside, filepath.Join(dir, "dirlink")),
		unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"passwd", "secret", "dirlink/secret", "fifo", "dirlink"} {
		rec := do(t, s, "GET", "/v1/sessions/s/files/"+p, "", nil)
		if e := errOf(t, rec); rec.Code != 409 || e.Code != CodeConflict || !strings.Contains(e.Message, p) {
			t.Errorf("GET %s: %d %+v", p, rec.Code, e)
		}
	}
	if rec := do(t, s, "PUT", "/v1/sessions/s/files/dirlink/secret", "pwned", nil); rec.Code != 409 {
		t.Errorf("PUT beneath a directory link: %d %s", rec.Code, rec.Body)
	}
	// A PUT at a link replaces the link; the host file is untouched.
	for _, p := range []string{"passwd", "secret"} {
		if rec := do(t, s, "PUT", "/v1/sessions/s/files/"+p, "mine", nil); rec.Code != 200 {
			t.Errorf("PUT %s: %d %s", p, rec.Code, rec.Body)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "host secret" {
		t.Fatalf("written through a link: %q", b)
	}
	if b, err := os.ReadFile("/etc/passwd"); err != nil || strings.Contains(string(b), "mine") {
		t.Fatal("/etc/passwd changed")
	}
	rec := do(t, s, "GET", "/v1/sessions/s/files", "", nil)
	var list []session.File
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || len(list) != 2 || list[0].Path != "passwd" || list[1].Path != "secret" {
		t.Fatalf("list: %d %s", rec.Code, rec.Body)
	}
	// A link removed is the link.
	if rec := do(t, s, "DELETE", "/v1/sessions/s/files/dirlink", "", nil); rec.Code != 204 {
		t.Fatalf("DELETE of a link: %d %s", rec.Code, rec.Body)
	}
	if _, err := os.Stat(secret); err != nil {
		t.Fatal("deleting a link removed its target")
	}
}

// A body is bounded as it streams, whether or not it says its length.
func TestSessionFilesHugeBody(t *testing.T) {
	store := fileStore(t, session.Options{MaxFileBytes: 1024})
	s, _ := newTestServer(t, func(o *Options) { o.Sessions = store; o.Runner = store.Wrap(fakeRunner{}) })
	big := strings.Repeat("x", 4096)
	if rec := do(t, s, "PUT", "/v1/sessions/s/files/big", big, nil); rec.Code != 413 || errOf(t, rec).Code != CodePayloadTooLarge {
		t.Fatalf("with a length: %d %s", rec.Code, rec.Body)
	}
	req := httptest.NewRequest("PUT", "/v1/sessions/s/files/big", strings.NewReader(big))
	req.ContentLength = -1 // chunked: only the stream tells
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	checkContract(t, "PUT", "/v1/sessions/s/files/big", rec)
	if rec.Code != 413 {
		t.Fatalf("chunked: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, s, "GET", "/v1/sessions/s/files/big", "", nil); rec.Code != 404 {
		t.Fatalf("a refused body left a file: %d", rec.Code)
	}
	if rec := do(t, s, "PUT", "/v1/sessions/s/files/fits", big[:1024], nil); rec.Code != 200 {
		t.Fatalf("at the cap: %d %s", rec.Code, rec.Body)
	}
}

// One key never reaches another's files; without sessions there are
// none.
func TestSessionFilesOwners(t *testing.T) {
	store := fileStore(t, session.Options{})
	const alice, bob = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
	s, _ := newTestServer(t, func(o *Options) {
		o.Sessions, o.Runner, o.APITokens = store, store.Wrap(fakeRunner{}), []string{alice, bob}
	})
	as := map[string]string{"Authorization": "Bearer " + alice}
	bs := map[string]string{"Authorization": "Bearer " + bob}
	if rec := do(t, s, "PUT", "/v1/sessions/shared/files/secret.txt", "alice's", as); rec.Code != 200 {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1/sessions/shared/files/secret.txt"}, {"GET", "/v1/sessions/shared/files"}, {"DELETE", "/v1/sessions/shared/files/secret.txt"},
	} {
		if rec := do(t, s, tc.method, tc.path, "", bs); rec.Code != 404 {
			t.Errorf("bob %s %s: %d %s", tc.method, tc.path, rec.Code, rec.Body)
		}
	}
	if rec := do(t, s, "GET", "/v1/sessions/shared/files/secret.txt", "", nil); rec.Code != 401 {
		t.Errorf("without a token: %d", rec.Code)
	}
	if rec := do(t, s, "GET", "/v1/sessions/shared/files/secret.txt", "", as); rec.Body.String() != "alice's" {
		t.Errorf("alice reads %q", rec.Body)
	}
	off, _ := newTestServer(t, nil)
	if rec := do(t, off, "PUT", "/v1/sessions/s/files/a", "x", nil); rec.Code != 404 {
		t.Errorf("without sessions: %d %s", rec.Code, rec.Body)
	}
}

// A write that would start a session over a cap is 429 naming it.
func TestSessionFilesSessionCap(t *testing.T) {
	store := fileStore(t, session.Options{MaxSessions: 1})
	s, _ := newTestServer(t, func(o *Options) { o.Sessions = store; o.Runner = store.Wrap(fakeRunner{}) })
	if rec := do(t, s, "PUT", "/v1/sessions/one/files/a", "x", nil); rec.Code != 200 {
		t.Fatalf("first: %d %s", rec.Code, rec.Body)
	}
	rec := do(t, s, "PUT", "/v1/sessions/two/files/a", "x", nil)
	e := errOf(t, rec)
	if rec.Code != 429 || e.Code != CodeTooManySessions || e.Limit != LimitServerSessions || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("second: %d %+v", rec.Code, e)
	}
	// Writing into the session that exists still works.
	if rec := do(t, s, "PUT", "/v1/sessions/one/files/b", "y", nil); rec.Code != 200 {
		t.Fatalf("the existing session: %d %s", rec.Code, rec.Body)
	}
}
