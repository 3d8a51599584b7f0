package callback

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSignVerifies(t *testing.T) {
	secret := []byte("s3cret")
	body := []byte(`{"status":"all_passed"}`)
	now := time.Unix(1_800_000_000, 0)
	h := Sign(secret, now, body)
	if !strings.HasPrefix(h, "t=1800000000,v1=") || len(h) != len("t=1800000000,v1=")+64 {
		t.Fatalf("header %q", h)
	}
	if err := verifyAt(secret, h, body, 5*time.Minute, now.Add(time.Minute)); err != nil {
		t.Fatalf("verify: %v", err)
	}
	// A second v1 for another secret (rotation) does not hurt.
	other := Sign([]byte("old"), now, body)
	_, v1, _ := strings.Cut(other, ",")
	if err := verifyAt(secret, v1+","+h, body, time.Minute, now); err != nil {
		t.Fatalf("two signatures: %v", err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	secret := []byte("s3cret")
	body := []byte(`{"status":"all_passed"}`)
	now := time.Unix(1_800_000_000, 0)
	good := Sign(secret, now, body)
	for _, tc := range []struct {
		name   string
		secret []byte
		header string
		body   string
		now    time.Time
		want   error
	}{
		{"changed body", secret, good, `{"status":"all_failed"}`, now, ErrMismatch},
		{"wrong secret", []byte("other"), good, string(body), now, ErrMismatch},
		{"no secret", nil, good, string(body), now, ErrMismatch},
		{"replayed an hour later", secret, good, string(body), now.Add(time.Hour), ErrStale},
		{"from the future", secret, good, string(body), now.Add(-time.Hour), ErrStale},
		{"timestamp moved", secret, strings.Replace(good, "t=1800000000", "t=1800003600", 1), string(body), now.Add(time.Hour), ErrMismatch},
		{"empty", secret, "", string(body), now, ErrMalformed},
		{"no t", secret, good[len("t=1800000000,"):], string(body), now, ErrMalformed},
		{"no v1", secret, "t=1800000000", string(body), now, ErrMalformed},
		{"t twice", secret, "t=1," + good, string(body), now, ErrMalformed},
		{"short v1", secret, "t=1800000000,v1=abcd", string(body), now, ErrMalformed},
		{"not hex", secret, "t=1800000000,v1=" + strings.Repeat("zz", 32), string(body), now, ErrMalformed},
		{"signed t", secret, "t=+1800000000" + good[len("t=1800000000"):], string(body), now, ErrMalformed},
		{"negative t", secret, "t=-5" + good[len("t=1800000000"):], string(body), now, ErrMalformed},
		{"huge t", secret, Sign(secret, time.Unix(1<<62, 0), body), string(body), now, ErrStale},
		{"too long", secret, good + "," + strings.Repeat("x=y,", 2000), string(body), now, ErrMalformed},
		{"junk part", secret, good + ",junk", string(body), now, ErrMalformed},
	} {
		err := verifyAt(tc.secret, tc.header, []byte(tc.body), 5*time.Minute, tc.now)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestVerifySignatureUsesTheClock(t *testing.T) {
	secret := []byte("k")
	body := []byte("{}")
	if err := VerifySignature(secret, Sign(secret, time.Now(), body), body, time.Minute); err != nil {
		t.Fatalf("fresh: %v", err)
	}
	old := Sign(secret, time.Now().Add(-10*time.Minute), body)
	if err := VerifySignature(secret, old, body, time.Minute); !errors.Is(err, ErrStale) {
		t.Fatalf("old: %v", err)
	}
}
