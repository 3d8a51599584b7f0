package callback

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header names of a delivery.
const (
	// SignatureHeader carries "t=<unix>,v1=<hex>".
	SignatureHeader = "X-Coderunner-Signature"
	// SubmissionHeader carries the submission id the result belongs to.
	// It is not signed: use it to find the submission, and the signed
	// body to trust it.
	SubmissionHeader = "X-Coderunner-Submission-Id"
)

// Errors of VerifySignature.
var (
	// ErrMalformed is a header that is not "t=<unix>,v1=<hex>".
	ErrMalformed = errors.New("callback signature header is malformed")
	// ErrMismatch is a header whose HMAC does not match the body (a wrong
	// secret, or a body changed on the way).
	ErrMismatch = errors.New("callback signature does not match the body")
	// ErrStale is a signature whose timestamp lies outside maxAge of now:
	// a replay of an old delivery, or a clock far off.
	ErrStale = errors.New("callback signature timestamp is outside the allowed window")
)

// maxHeader bounds the header VerifySignature parses.
const maxHeader = 4096

// Sign returns the X-Coderunner-Signature value of body sent at t.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// VerifySignature checks header (the X-Coderunner-Signature value) against
// body, the raw bytes received, with the shared secret: the HMAC must
// match, compared in constant time, and the timestamp must lie within
// maxAge of now, either way. A header may carry several v1 values (one
// per secret while a secret is being replaced); one match is enough. The
// error wraps ErrMalformed, ErrMismatch or ErrStale.
func VerifySignature(secret []byte, header string, body []byte, maxAge time.Duration) error {
	return verifyAt(secret, header, body, maxAge, time.Now())
}

func verifyAt(secret []byte, header string, body []byte, maxAge time.Duration, now time.Time) error {
	if len(secret) == 0 {
		return fmt.Errorf("%w: no secret to check it with", ErrMismatch)
	}
	if len(header) > maxHeader {
		return fmt.Errorf("%w: longer than %d bytes", ErrMalformed, maxHeader)
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%w: %q is not key=value", ErrMalformed, part)
		}
		switch k {
		case "t":
			if ts != "" {
				return fmt.Errorf("%w: t given twice", ErrMalformed)
			}
			ts = v
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				return fmt.Errorf("%w: v1 is not %d hex bytes", ErrMalformed, sha256.Size)
			}
			sigs = append(sigs, b)
		}
		// Other keys (later schemes) are ignored.
	}
	if ts == "" || len(sigs) == 0 {
		return fmt.Errorf("%w: t and v1 are required", ErrMalformed)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sec < 0 || strings.HasPrefix(ts, "+") {
		return fmt.Errorf("%w: t %q is not unix seconds", ErrMalformed, ts)
	}
	want := mac(secret, ts, body)
	ok := false
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			ok = true
		}
	}
	if !ok {
		return ErrMismatch
	}
	// Checked after the HMAC, so that a stale answer says the signature
	// was the sender's.
	d := now.Sub(time.Unix(sec, 0))
	if sec > now.Unix()+int64(maxAge/time.Second)+1 || d > maxAge || d < -maxAge {
		return fmt.Errorf("%w: signed at %d, now %d, window %s", ErrStale, sec, now.Unix(), maxAge)
	}
	return nil
}
