package webhooks

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The plugin posts its webhooks with PHP's HTTP stream wrapper
// (file_get_contents with a stream context), which writes a request no Go
// HTTP client writes: exactly Host, Connection: close, then the
// Content-Type and Content-Length it was given, and nothing else (no
// User-Agent, no Accept-Encoding). net/http adds both and orders headers
// its own way, so the request is written here on a plain connection, the
// way the wrapper writes it, and only the status line of the answer is
// read.

// request is the bytes of the plugin's POST of body to u.
func request(u *url.URL, body []byte) []byte {
	var b strings.Builder
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	b.WriteString("POST ")
	b.WriteString(path)
	if u.RawQuery != "" {
		b.WriteString("?")
		b.WriteString(u.RawQuery)
	}
	b.WriteString(" HTTP/1.1\r\n")
	if u.User != nil {
		// The wrapper sends URL credentials as Basic auth, before Host.
		pass, _ := u.User.Password()
		b.WriteString("Authorization: Basic ")
		b.WriteString(base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pass)))
		b.WriteString("\r\n")
	}
	b.WriteString("Host: ")
	b.WriteString(hostHeader(u))
	b.WriteString("\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ")
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteString("\r\n\r\n")
	b.Write(body)
	return []byte(b.String())
}

// hostHeader is the Host header: the port only when it is not the
// scheme's default, as the wrapper writes it.
func hostHeader(u *url.URL) string {
	host := u.Hostname()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" && p != defaultPort(u.Scheme) {
		host += ":" + p
	}
	return host
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// ParseURL checks a webhook URL: http or https with a host.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("webhook URL %q: want http or https", raw)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("webhook URL %q: no host", raw)
	}
	return u, nil
}

// errStatus is an answer worth another try (5xx, 429).
type errStatus struct{ code int }

func (e errStatus) Error() string { return fmt.Sprintf("HTTP status %d", e.code) }

// post sends one request within timeout and reads the status line.
// Any answer but 5xx and 429 is final (PHP's wrapper does not retry
// either; redirects are not followed).
func post(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), u *url.URL, body []byte, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := net.JoinHostPort(u.Hostname(), u.Port())
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), defaultPort(u.Scheme))
	}
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	// A cancelled context (Stop past its grace) ends the exchange at once.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if u.Scheme == "https" {
		tc := tls.Client(conn, &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			return err
		}
		conn = tc
	}
	if _, err := conn.Write(request(u, body)); err != nil {
		return err
	}
	line, err := textproto.NewReader(bufio.NewReader(conn)).ReadLine()
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	_, rest, ok := strings.Cut(line, " ")
	code, cerr := strconv.Atoi(strings.SplitN(rest, " ", 2)[0])
	if !ok || cerr != nil || !strings.HasPrefix(line, "HTTP/") {
		return errors.New("not an HTTP answer: " + strconv.Quote(line))
	}
	if code >= 500 || code == 429 {
		return errStatus{code}
	}
	return nil
}
