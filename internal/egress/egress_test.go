package egress

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestForbidden(t *testing.T) {
	for _, s := range []string{
		"127.0.0.1", "127.1.2.3", "::1", "10.0.0.1", "172.16.5.4", "192.168.1.1",
		"169.254.169.254", "fe80::1", "fd00:ec2::254", "fc00::1", "0.0.0.0", "::",
		"100.100.100.200", "224.0.0.1", "255.255.255.255", "::ffff:127.0.0.1",
		"::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "ff02::1", "0.1.2.3",
	} {
		if !Forbidden(netip.MustParseAddr(s)) {
			t.Errorf("%s is not forbidden", s)
		}
	}
	for _, s := range []string{"93.184.215.14", "8.8.8.8", "2606:4700::1111", "1.1.1.1"} {
		if Forbidden(netip.MustParseAddr(s)) {
			t.Errorf("%s is forbidden", s)
		}
	}
}

// fakeResolver answers from a table, counting the lookups.
type fakeResolver struct {
	answers map[string][]string
	calls   atomic.Int32
	// then, when set, answers every lookup after the first.
	then []string
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	n := f.calls.Add(1)
	ans, ok := f.answers[host]
	if n > 1 && f.then != nil {
		ans, ok = f.then, true
	}
	if !ok {
		return nil, errors.New("no such host")
	}
	var out []netip.Addr
	for _, a := range ans {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func TestCheckURLRefusesAttacks(t *testing.T) {
	res := &fakeResolver{answers: map[string][]string{
		"loop.example":     {"127.0.0.1"},
		"mixed.example":    {"93.184.215.14", "10.0.0.5"},
		"meta.example":     {"169.254.169.254"},
		"mapped.example":   {"::ffff:127.0.0.1"},
		"public.example":   {"93.184.215.14"},
		"localhost":        {"127.0.0.1", "::1"},
		"allowed.internal": {"10.1.2.3"},
	}}
	p := &Policy{Resolver: res}
	ctx := context.Background()
	for _, raw := range []string{
		"http://127.0.0.1/cb", "http://127.0.0.1:8080/cb", "http://[::1]/cb", "http://169.254.169.254/latest/meta-data/",
		"http://[::ffff:127.0.0.1]/", "http://0.0.0.0/", "http://10.0.0.1/", "http://[fd00:ec2::254]/",
		"http://loop.example/", "http://mixed.example/", "http://meta.example/", "http://mapped.example/",
		"http://localhost/", "http://LOCALHOST./",
		"file:///etc/passwd", "gopher://public.example/", "ftp://public.example/", "//public.example/x",
		"http:///nohost", "http://user:pw@public.example/", "public.example/cb", "http://public.example:0/",
		"http://public.example:99999/", "http://unknown.example/", "http://" + strings.Repeat("a", 3000) + ".example/",
		"http://[fe80::1%25eth0]/", "http://2130706433/", "http://0x7f.1/",
	} {
		if _, err := p.CheckURL(ctx, raw); err == nil {
			t.Errorf("%s was allowed", raw)
		}
	}
	for _, raw := range []string{"http://public.example/cb", "https://public.example:8443/cb?x=1", "http://93.184.215.14/"} {
		if _, err := p.CheckURL(ctx, raw); err != nil {
			t.Errorf("%s refused: %v", raw, err)
		}
	}
	// The operator's exceptions: by prefix, by address, by name.
	p.Allow = []string{"127.0.0.0/8", "::1", "allowed.internal"}
	for _, raw := range []string{"http://127.0.0.1:9/cb", "http://[::1]/", "http://localhost/", "http://allowed.internal/"} {
		if _, err := p.CheckURL(ctx, raw); err != nil {
			t.Errorf("%s refused with the exceptions: %v", raw, err)
		}
	}
	for _, raw := range []string{"http://169.254.169.254/", "http://10.1.2.3/", "http://mixed.example/"} {
		if _, err := p.CheckURL(ctx, raw); err == nil {
			t.Errorf("%s allowed by exceptions that do not cover it", raw)
		}
	}
}

func TestParseAllow(t *testing.T) {
	if err := ParseAllow([]string{"127.0.0.1", "10.0.0.0/8", "[::1]", "hook.internal"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "http://x", "a b", "x/y", "user@host", "host:80"} {
		if err := ParseAllow([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestDialChecksWhatItConnects: a name that was public when checked and
// resolves to loopback at the connection (DNS rebinding) is refused; the
// client never resolves it behind the policy's back.
func TestDialChecksWhatItConnects(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("the loopback server was reached")
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	res := &fakeResolver{answers: map[string][]string{"rebind.example": {"93.184.215.14"}}, then: []string{"127.0.0.1"}}
	p := &Policy{Resolver: res}
	u := "http://rebind.example:" + port + "/"
	if _, err := p.CheckURL(context.Background(), u); err != nil {
		t.Fatalf("check: %v", err)
	}
	resp, err := p.Client(5*time.Second).Post(u, "application/json", strings.NewReader("{}"))
	if err == nil {
		resp.Body.Close()
		t.Fatal("the rebound name was reached")
	}
	if !errors.Is(err, ErrForbidden) {
		t.Fatalf("error %v, want ErrForbidden", err)
	}
}

// TestNoRedirect: a receiver the operator allowed answers with a redirect
// to the metadata service; the client stops at the 3xx.
func TestNoRedirect(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	p := &Policy{Allow: []string{"127.0.0.1"}}
	resp, err := p.Client(5*time.Second).Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	Drain(resp.Body, 1024)
	if resp.StatusCode != http.StatusTemporaryRedirect || hits.Load() != 1 {
		t.Fatalf("status %d after %d requests", resp.StatusCode, hits.Load())
	}
}
