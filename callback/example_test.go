package callback_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/coderunner/coderunner/callback"
)

// A receiver checks each delivery over the raw body before it parses it,
// and refuses one signed too long ago.
func ExampleVerifySignature() {
	secret := []byte("the server's callback_secret")
	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		err = callback.VerifySignature(secret, r.Header.Get(callback.SignatureHeader), body, 5*time.Minute)
		switch {
		case errors.Is(err, callback.ErrStale):
			http.Error(w, "too old: a replay?", http.StatusUnauthorized)
		case err != nil:
			http.Error(w, "not signed by coderunner", http.StatusUnauthorized)
		default:
			fmt.Println("accepted", r.Header.Get(callback.SubmissionHeader), string(body))
		}
	})

	body := []byte(`{"request_id":"r-1","status":"all_passed"}`)
	for _, signedAt := range []time.Time{time.Now(), time.Now().Add(-time.Hour)} {
		req := httptest.NewRequest("POST", "/hook", strings.NewReader(string(body)))
		req.Header.Set(callback.SignatureHeader, callback.Sign(secret, signedAt, body))
		req.Header.Set(callback.SubmissionHeader, "sub_0123")
		rec := httptest.NewRecorder()
		receiver.ServeHTTP(rec, req)
		fmt.Println(rec.Code)
	}
	// Output:
	// accepted sub_0123 {"request_id":"r-1","status":"all_passed"}
	// 200
	// 401
}
