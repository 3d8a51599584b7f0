// Package httpguard holds the checks that keep a web page from driving
// coderunner's HTTP endpoints: the Host and Origin a request carries, and
// the media type of its body.
//
// A page in a browser can send requests to any address the browser can
// reach, loopback included, and under a name it controls (DNS rebinding:
// attacker.example resolving to 127.0.0.1). Such a request carries that
// name as Host, and an Origin that is not the server's. A form or a
// "simple" fetch can also post a JSON text as text/plain without a CORS
// preflight; requiring application/json forces the preflight, which the
// server never grants.
package httpguard

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// ErrHost and ErrOrigin are the refusals of Hosts.Check.
var (
	ErrHost   = errors.New("host not allowed")
	ErrOrigin = errors.New("origin not allowed")
)

// Hosts decides which requests a server answers by their Host and Origin
// headers.
//
// The Host must be a loopback name (localhost or a loopback address) or
// one of Allowed. When Allowed is empty and the server does not listen on
// a loopback address, any Host is accepted: such a server is reached by
// whatever names its network gives it, and its API token (required there)
// is what keeps pages out. A request without a Host (HTTP/1.0) is
// accepted: browsers always send one.
//
// An Origin, when present, must be the server's own: its host and port
// equal to the Host the request was sent to, or one of Allowed. "null"
// (a sandboxed frame, a file: page) is refused.
type Hosts struct {
	// Allowed are further names of the server: "name" matches it on any
	// port, "name:port" on that port only.
	Allowed []string
}

// Check returns nil when r may be served, or an error wrapping ErrHost or
// ErrOrigin that says why not, for the client.
func (h Hosts) Check(r *http.Request) error {
	if r.Host != "" && !IsLoopback(r.Host) && !h.listed(r.Host) {
		local := false
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil {
			local = IsLoopback(la.String())
		}
		switch {
		case local:
			return fmt.Errorf("%w: Host %q is not local, and this server listens on a loopback address (allow further names with server.allowed_hosts)", ErrHost, r.Host)
		case len(h.Allowed) > 0:
			return fmt.Errorf("%w: Host %q is not one of server.allowed_hosts", ErrHost, r.Host)
		}
	}
	origins := r.Header.Values("Origin")
	if len(origins) == 0 {
		return nil
	}
	if len(origins) > 1 {
		return fmt.Errorf("%w: several Origin headers", ErrOrigin)
	}
	o := origins[0]
	u, err := url.Parse(o)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("%w: Origin %q is not this server's: requests from web pages are refused", ErrOrigin, o)
	}
	if !strings.EqualFold(withPort(u.Host, u.Scheme), withPort(r.Host, u.Scheme)) && !h.listed(u.Host) {
		return fmt.Errorf("%w: Origin %q is not this server's (%s): requests from web pages of other sites are refused", ErrOrigin, o, r.Host)
	}
	return nil
}

// listed reports whether hostport is one of Allowed.
func (h Hosts) listed(hostport string) bool {
	host, port := splitHost(hostport)
	for _, a := range h.Allowed {
		ah, ap := splitHost(a)
		if strings.EqualFold(ah, host) && (ap == "" || ap == port) {
			return true
		}
	}
	return false
}

// splitHost splits "host:port", "[v6]:port", "host" or "[v6]".
func splitHost(hostport string) (host, port string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return strings.Trim(hostport, "[]"), ""
	}
	return host, port
}

// withPort adds the scheme's default port to a Host without one, so that
// "example.com" and "example.com:80" compare equal.
func withPort(hostport, scheme string) string {
	host, port := splitHost(hostport)
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(host, port)
}

// IsLoopback reports whether a host, with or without a port, is local:
// localhost or a loopback address.
func IsLoopback(hostport string) bool {
	host, _ := splitHost(hostport)
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// IsJSON reports whether a Content-Type is application/json, with no
// charset or charset utf-8.
func IsJSON(contentType string) bool {
	if contentType == "application/json" {
		return true
	}
	media, params, err := mime.ParseMediaType(contentType)
	if err != nil || media != "application/json" {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8")
}
