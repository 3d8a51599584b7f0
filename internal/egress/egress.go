// Package egress makes HTTP requests to addresses a client of the
// server chose (a submission's callback_url) without letting that client
// reach what only the server can: its loopback, the private network
// around it, link-local addresses and cloud metadata services.
//
// A URL is checked when it is given (Policy.CheckURL) and again at every
// connection: the client's transport resolves the host once, refuses it
// when any of its addresses is forbidden, and connects to an address it
// checked, never resolving again, so a name that changes its answer
// between the check and the connection (DNS rebinding) gains nothing.
// Redirects are not followed, proxies from the environment are not used,
// and the answer's body is read only up to a bound.
package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// ErrForbidden is a destination the policy refuses.
var ErrForbidden = errors.New("destination not allowed")

// MaxURLBytes bounds a URL.
const MaxURLBytes = 2048

// forbidden are the ranges refused besides those netip classifies
// (loopback, private, link-local, multicast, unspecified).
var forbidden = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT (and Alibaba's metadata at 100.100.100.200)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: checked by its IPv4 too
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local NAT64
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("100::/64"),        // discard
	netip.MustParsePrefix("2002::/16"),       // 6to4, which embeds any IPv4
	netip.MustParsePrefix("2001::/32"),       // Teredo, likewise
}

// Forbidden reports whether a is an address no callback may reach unless
// the operator allowed it: loopback, private, link-local (169.254.169.254,
// the metadata service of most clouds, among them), unique local
// (fd00:ec2::254), multicast, unspecified, or one of the special ranges
// above. An IPv4 address mapped into IPv6 is judged as the IPv4 one.
func Forbidden(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.Zone() != "" {
		return true
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	for _, p := range forbidden {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Resolver looks host names up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Policy says which destinations requests may reach.
type Policy struct {
	// Allow are exceptions the operator made (server.callback_allowed_hosts):
	// a host name (any address it resolves to is then allowed), an IP
	// address, or a CIDR prefix (forbidden addresses in it are allowed).
	Allow []string
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
}

// ParseAllow checks the entries of Policy.Allow.
func ParseAllow(entries []string) error {
	for _, e := range entries {
		if _, _, err := parseEntry(e); err != nil {
			return err
		}
	}
	return nil
}

// parseEntry reads one Allow entry as a prefix or a host name.
func parseEntry(e string) (netip.Prefix, string, error) {
	e = strings.TrimSpace(e)
	if p, err := netip.ParsePrefix(e); err == nil {
		return p.Masked(), "", nil
	}
	if a, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
		return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), "", nil
	}
	if e == "" || strings.ContainsAny(e, "/:@ \t[]") {
		return netip.Prefix{}, "", fmt.Errorf("%q is not a host name, an IP address or a CIDR prefix", e)
	}
	return netip.Prefix{}, strings.ToLower(strings.TrimSuffix(e, ".")), nil
}

// allowed reports whether the operator allowed host (by name) or a (by
// prefix).
func (p *Policy) allowedName(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, e := range p.Allow {
		if _, name, err := parseEntry(e); err == nil && name != "" && name == host {
			return true
		}
	}
	return false
}

func (p *Policy) allowedAddr(a netip.Addr) bool {
	a = a.Unmap()
	for _, e := range p.Allow {
		if pre, _, err := parseEntry(e); err == nil && pre.IsValid() && pre.Contains(a) {
			return true
		}
	}
	return false
}

// CheckURL refuses a URL that is not an absolute http or https URL with a
// host, carries credentials, is too long, or names an address the policy
// forbids (a literal address, or a name resolving to one). It returns
// the parsed URL.
func (p *Policy) CheckURL(ctx context.Context, raw string) (*url.URL, error) {
	if len(raw) > MaxURLBytes {
		return nil, fmt.Errorf("longer than %d bytes", MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("not a URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("scheme %q: only http and https are allowed", u.Scheme)
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return nil, errors.New("no host")
	case u.User != nil:
		return nil, errors.New("credentials in the URL are not allowed")
	}
	if port := u.Port(); port != "" {
		if n, err := net.LookupPort("tcp", port); err != nil || n < 1 || n > 65535 || len(port) > 5 {
			return nil, fmt.Errorf("port %q is not valid", port)
		}
	}
	if _, err := p.resolve(ctx, u.Hostname()); err != nil {
		return nil, err
	}
	return u, nil
}

// resolve returns the addresses to connect to for host, every one
// allowed, or ErrForbidden naming the first refused.
func (p *Policy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if Forbidden(a) && !p.allowedAddr(a) {
			return nil, fmt.Errorf("%w: %s is a loopback, private, link-local or reserved address", ErrForbidden, a)
		}
		return []netip.Addr{a.Unmap()}, nil
	}
	r := p.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("unable to resolve %q: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("unable to resolve %q: no address", host)
	}
	byName := p.allowedName(host)
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		a = a.Unmap()
		// One forbidden address refuses the name: a name that mixes
		// them would otherwise reach the forbidden one when the other
		// fails.
		if Forbidden(a) && !byName && !p.allowedAddr(a) {
			return nil, fmt.Errorf("%w: %q resolves to %s, a loopback, private, link-local or reserved address", ErrForbidden, host, a)
		}
		out = append(out, a)
	}
	return out, nil
}

// DialContext connects to addr ("host:port") at an address the policy
// allows, resolved once here.
func (p *Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := p.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	var first error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// Client returns an HTTP client whose connections go through the policy:
// no proxy, no redirect followed (the 3xx is the answer), each request
// bounded by timeout, connections not kept between requests to different
// hosts for long.
func (p *Policy) Client(timeout time.Duration) *http.Client {
	t := &http.Transport{
		Proxy:                  nil,
		DialContext:            p.DialContext,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxIdleConns:           16,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
	}
	return &http.Client{
		Transport: t,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// Drain reads at most limit bytes of an answer's body, so that a
// connection may be reused without a hostile server making the reader
// read for ever; the caller closes the body.
func Drain(body io.Reader, limit int64) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, limit))
}
