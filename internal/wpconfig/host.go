package wpconfig

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Host is DB_HOST split into its parts.
type Host struct {
	Host   string // host name or IP, IPv6 without brackets; "" when only a socket was given
	Port   int    // 0 = default (3306)
	Socket string // unix socket path, "" if none
	IPv6   bool
}

// ParseHost splits DB_HOST the way WordPress's wpdb::parse_db_host does:
//
//	"db.example.com"           host
//	"db.example.com:3307"      host and port
//	"localhost:/run/my.sock"   host and socket (a port may come before the socket too)
//	":/run/my.sock"            socket only
//	"/run/my.sock"             socket only (not accepted by WordPress; accepted here)
//	"[::1]:3306", "::1"        IPv6, with or without brackets; a port needs the brackets
//
// "localhost" is returned as the host "localhost". Note that PHP's mysqli
// treats the host "localhost" as "use the unix socket" (the one given, or
// mysqli.default_socket), and ignores the socket for any other host; see
// Settings.DSN for what this package does with that. ParseHost is stricter
// than WordPress, which silently ignores trailing garbage.
func ParseHost(dbHost string) (Host, error) {
	var h Host
	s := strings.TrimSpace(dbHost)
	if strings.HasPrefix(s, "/") {
		h.Socket = s
		return h, nil
	}
	if i := strings.Index(s, ":/"); i >= 0 {
		s, h.Socket = s[:i], s[i+1:]
	}
	var port string
	hasPort := false
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return Host{}, fmt.Errorf("DB_HOST %q: missing ']'", dbHost)
		}
		h.Host, h.IPv6 = s[1:end], true
		if rest := s[end+1:]; rest != "" {
			if port, hasPort = strings.CutPrefix(rest, ":"); !hasPort {
				return Host{}, fmt.Errorf("DB_HOST %q: unexpected %q after ']'", dbHost, rest)
			}
		}
	case strings.Count(s, ":") > 1:
		h.Host, h.IPv6 = s, true
	default:
		h.Host, port, hasPort = strings.Cut(s, ":")
	}
	if h.IPv6 {
		if a, err := netip.ParseAddr(h.Host); err != nil || !a.Is6() {
			return Host{}, fmt.Errorf("DB_HOST %q: invalid IPv6 address %q", dbHost, h.Host)
		}
	} else if strings.Trim(h.Host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") != "" {
		return Host{}, fmt.Errorf("DB_HOST %q: invalid host name %q", dbHost, h.Host)
	}
	if hasPort {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 || strings.TrimLeft(port, "0123456789") != "" {
			return Host{}, fmt.Errorf("DB_HOST %q: invalid port %q", dbHost, port)
		}
		h.Port = p
	}
	if h.Host == "" && h.Socket == "" {
		return Host{}, fmt.Errorf("DB_HOST %q: no host or socket", dbHost)
	}
	return h, nil
}

// DSN builds a github.com/go-sql-driver/mysql DSN,
// user:password@tcp(host:port)/dbname or user:password@unix(/path)/dbname,
// followed by "?"+params when params is not empty. params is appended
// verbatim (a leading '?' is dropped), e.g. "parseTime=true&loc=UTC"; its
// values must be URL-escaped, and a raw '/' is rejected because the driver
// would take it for the start of the database name.
//
// Like mysqli, a socket is used when the host is "localhost" or empty and a
// socket was given; a socket given with any other host is ignored and TCP is
// used. A bare "localhost" (no socket) becomes tcp(localhost:3306), whereas
// PHP would use its default unix socket: callers that need the socket should
// pass an explicit DSN. A missing port means 3306. DB_CHARSET is not added;
// the driver's default is utf8mb4.
//
// The password may contain any character. The user may not contain ':' and
// the socket path may not contain '@'; the database name is path-escaped.
func (s Settings) DSN(params string) (string, error) {
	h, err := ParseHost(s.DBHost)
	if err != nil {
		return "", err
	}
	netw, addr := "tcp", h.Socket
	if h.Socket == "" || h.Host != "" && h.Host != "localhost" {
		port := h.Port
		if port == 0 {
			port = 3306
		}
		addr = net.JoinHostPort(h.Host, strconv.Itoa(port))
	} else {
		netw = "unix"
	}
	params = strings.TrimPrefix(params, "?")
	switch {
	case strings.Contains(s.DBUser, ":"):
		return "", errors.New("DB_USER contains ':', which a mysql DSN cannot express")
	case strings.Contains(addr, "@"):
		return "", fmt.Errorf("DB_HOST socket %q contains '@', which a mysql DSN cannot express", addr)
	case strings.Contains(params, "/"):
		return "", fmt.Errorf("DSN params %q contain '/'; escape it as %%2F", params)
	}
	var b strings.Builder
	b.WriteString(s.DBUser)
	if s.DBPassword != "" {
		b.WriteString(":" + s.DBPassword)
	}
	b.WriteString("@" + netw + "(" + addr + ")/" + url.PathEscape(s.DBName))
	if params != "" {
		b.WriteString("?" + params)
	}
	return b.String(), nil
}
