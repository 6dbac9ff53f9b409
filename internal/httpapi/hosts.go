package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// ReasonHostNotAllowed refuses a request to a token-less server whose
// Host header names neither the loopback interface nor the listen
// address.
const ReasonHostNotAllowed = "host_not_allowed"

// LocalHostGuard protects a server that takes no token (--insecure-no-auth,
// the --metrics-listen listener) from DNS rebinding (N10): a web page on
// evil.example whose name is re-pointed at 127.0.0.1 makes the operator's
// browser send its requests to the loopback server as same-origin ones,
// with Host: evil.example. The guard answers those 421 and lets through
// only a Host that is a loopback address, localhost (or a name under
// .localhost, which browsers resolve to loopback themselves), or the host
// of the listen address. A request with no Host at all (HTTP/1.0) cannot
// come from a browser and is let through.
func LocalHostGuard(listen string, h http.Handler) http.Handler {
	listenHost, _, _ := net.SplitHostPort(listen)
	listenHost = normalHost(listenHost)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowedHost(r.Host, listenHost) {
			b, _ := marshal(object{
				{"error", fmt.Sprintf("Host %s is not this server's: without a token it answers only requests to a loopback name or address (127.0.0.1, [::1], localhost) or its listen host.", quoteHost(r.Host))},
				{"reason", ReasonHostNotAllowed},
			})
			write(w, http.StatusMisdirectedRequest, b)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// allowedHost reports whether a Host header may reach a token-less server.
func allowedHost(hostport, listenHost string) bool {
	if hostport == "" {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = normalHost(host)
	switch {
	case host == "localhost", strings.HasSuffix(host, ".localhost"):
		return true
	case listenHost != "" && host == listenHost:
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// normalHost lowercases a host name and drops IPv6 brackets and a final
// dot ("LOCALHOST." is localhost).
func normalHost(h string) string {
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// quoteHost quotes at most the start of a Host header.
func quoteHost(h string) string {
	if len(h) > 80 {
		return fmt.Sprintf("%q…", h[:80])
	}
	return fmt.Sprintf("%q", h)
}
