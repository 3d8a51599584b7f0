package httpguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHostsCheck(t *testing.T) {
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	wide := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 8080}
	for _, tc := range []struct {
		name    string
		local   net.Addr
		allowed []string
		host    string
		origin  string
		want    error
	}{
		{"loopback host", loop, nil, "127.0.0.1:8080", "", nil},
		{"localhost", loop, nil, "LocalHost:8080", "", nil},
		{"v6 loopback", loop, nil, "[::1]:8080", "", nil},
		{"rebinding name on loopback", loop, nil, "attacker.example:8080", "", ErrHost},
		{"rebinding name without port", loop, nil, "attacker.example", "", ErrHost},
		{"private address on loopback", loop, nil, "10.0.0.5:8080", "", ErrHost},
		{"allowed name on loopback", loop, []string{"runner.internal"}, "runner.internal:8080", "", nil},
		{"allowed name, other port", loop, []string{"runner.internal:9000"}, "runner.internal:8080", "", ErrHost},
		{"any host on a wide listener", wide, nil, "10.0.0.5:8080", "", nil},
		{"unlisted host on a wide listener with a list", wide, []string{"runner.internal"}, "attacker.example", "", ErrHost},
		{"no Host", loop, nil, "", "", nil},
		{"same origin", loop, nil, "127.0.0.1:8080", "http://127.0.0.1:8080", nil},
		{"same origin, default port", wide, nil, "runner.example", "http://runner.example:80", nil},
		{"web origin", loop, nil, "127.0.0.1:8080", "https://attacker.example", ErrOrigin},
		{"web origin on a wide listener", wide, nil, "10.0.0.5:8080", "http://attacker.example", ErrOrigin},
		{"origin other port", loop, nil, "127.0.0.1:8080", "http://127.0.0.1:3000", ErrOrigin},
		{"null origin", loop, nil, "127.0.0.1:8080", "null", ErrOrigin},
		{"allowed origin", wide, []string{"10.0.0.5", "ui.internal"}, "10.0.0.5:8080", "https://ui.internal", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/run", nil)
			r.Host = tc.host
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tc.local))
			err := Hosts{Allowed: tc.allowed}.Check(r)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("Check: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                  true,
		"application/json; charset=utf-8":   true,
		"Application/JSON; charset=UTF-8":   true,
		"application/json; charset=latin1":  false,
		"text/plain":                        false,
		"text/plain; charset=utf-8":         false,
		"application/x-www-form-urlencoded": false,
		"multipart/form-data; boundary=x":   false,
		"":                                  false,
		"application/json5":                 false,
	} {
		if got := IsJSON(ct); got != want {
			t.Errorf("IsJSON(%q) = %v, want %v", ct, got, want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		host string
		want bool
	}{
		{"localhost", true}, {"LOCALHOST:80", true}, {"127.0.0.1", true}, {"127.1.2.3:8080", true},
		{"[::1]:80", true}, {"::1", true}, {"[::1]", true}, {"[::ffff:127.0.0.1]:80", true},
		{"example.com", false}, {"10.0.0.1:80", false}, {"localhost.example.com", false}, {"", false},
	}
	for _, tt := range tests {
		if got := IsLoopback(tt.host); got != tt.want {
			t.Errorf("%q: %v", tt.host, got)
		}
	}
}
