package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cookieName holds a login: a random session id, its expiry and an HMAC
// of both under a key derived from the operator token (sessionKey), so a
// login survives a restart and is valid on every daemon with the same
// token, and changing the token ends every session. Only logged-out
// sessions are stored (auth.revoked, in memory, until they expire): a
// cookie copied before a logout stops working at the logout (N16) on this
// process; a restart forgets the list (see docs/operating.md).
const cookieName = "queuety_ui"

// auth decides who may see and do what.
//
// CSRF: the cookie is SameSite=Strict, net/http's CrossOriginProtection
// refuses cross-site posts by their Fetch metadata, and every form carries
// a token derived from the session id (HMAC, so it needs no storage and
// dies with the session). A request that authenticates with
// Authorization: Bearer carries no ambient credential and needs no form
// token.
type auth struct {
	token    string
	open     bool // no auth (loopback only)
	key      []byte
	ttl      time.Duration
	now      func() time.Time
	openCSRF string

	mu sync.Mutex
	// revoked holds logged-out session ids until their cookie's expiry.
	revoked map[string]time.Time
	// failures throttles wrong tokens per client (N17).
	failures *loginThrottle
}

// sessionKeyLabel separates the cookie key from any other use of the
// operator token.
const sessionKeyLabel = "queuety dashboard session key v1"

// sessionKey is the key of cookies, form tokens and flash signatures:
// HMAC-SHA256 of a fixed label under the operator token, so it is the same
// after a restart and on every daemon sharing the token. Without a token
// (no auth, loopback only) it is random per process.
func sessionKey(token string) ([]byte, error) {
	if token == "" {
		key := make([]byte, 32)
		_, err := rand.Read(key)
		return key, err
	}
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(sessionKeyLabel))
	return m.Sum(nil), nil
}

func newAuth(token string, open bool, ttl time.Duration, now func() time.Time) (*auth, error) {
	key, err := sessionKey(token)
	if err != nil {
		return nil, err
	}
	a := &auth{token: token, open: open, key: key, ttl: ttl, now: now, revoked: map[string]time.Time{}, failures: newLoginThrottle(now)}
	a.openCSRF = a.mac("csrf", "open")
	return a, nil
}

func (a *auth) mac(parts ...string) string {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(m.Sum(nil))
}

// signed reports whether sig is the MAC of parts.
func (a *auth) signed(sig string, parts ...string) bool {
	return hmac.Equal([]byte(sig), []byte(a.mac(parts...)))
}

// session is what a request proved.
type session struct {
	ok     bool
	bearer bool
	csrf   string // the form token of this session ("" for bearer)
	// throttled: a bearer token from a client that must still wait this
	// long after wrong tokens (it was not checked).
	throttled time.Duration
}

// refuseThrottled answers 429 with Retry-After when s was throttled.
func refuseThrottled(w http.ResponseWriter, s session) bool {
	if s.throttled <= 0 {
		return false
	}
	secs := int((s.throttled + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	http.Error(w, fmt.Sprintf("Too many wrong tokens from your address: try again in %d s.", secs), http.StatusTooManyRequests)
	return true
}

type ctxKey struct{}

func sessionOf(r *http.Request) session {
	s, _ := r.Context().Value(ctxKey{}).(session)
	return s
}

// validToken compares a presented token with the operator token in
// constant time.
func (a *auth) validToken(t string) bool {
	t = strings.TrimSpace(t)
	return a.token != "" && subtle.ConstantTimeCompare([]byte(t), []byte(a.token)) == 1
}

// identify reads the request's credentials: the operator bearer token,
// or a valid session cookie.
func (a *auth) identify(r *http.Request) session {
	if a.open {
		return session{ok: true, csrf: a.openCSRF}
	}
	if scheme, t, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		// A bearer token is a login on every request: it is throttled as
		// the login form is, or guessing would just move here.
		client := clientOf(r)
		if wait := a.failures.wait(client); wait > 0 {
			return session{bearer: true, throttled: wait}
		}
		if !a.validToken(t) {
			a.failures.fail(client)
			return session{bearer: true}
		}
		a.failures.succeed(client)
		return session{ok: true, bearer: true}
	}
	c, err := r.Cookie(cookieName)
	if err != nil {
		return session{}
	}
	id, ok := a.verify(c.Value)
	if !ok {
		return session{}
	}
	return session{ok: true, csrf: a.mac("csrf", id)}
}

// issue makes a cookie value for a new session.
func (a *auth) issue() (string, time.Time) {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	id := base64.RawURLEncoding.EncodeToString(b)
	exp := a.now().Add(a.ttl)
	e := strconv.FormatInt(exp.Unix(), 10)
	return id + "." + e + "." + a.mac("session", id, e), exp
}

// verify checks a cookie value's signature and expiry, returning the
// session id.
func (a *auth) verify(v string) (string, bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return "", false
	}
	if !hmac.Equal([]byte(parts[2]), []byte(a.mac("session", parts[0], parts[1]))) {
		return "", false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !a.now().Before(time.Unix(exp, 0)) {
		return "", false
	}
	a.mu.Lock()
	_, out := a.revoked[parts[0]]
	a.mu.Unlock()
	if out {
		return "", false
	}
	return parts[0], true
}

// revoke ends the session of a cookie value, if it is a valid one. The
// list holds only sessions that would still be valid, so it is as long as
// the logouts of one session lifetime.
func (a *auth) revoke(v string) {
	id, ok := a.verify(v)
	if !ok {
		return
	}
	exp, _ := strconv.ParseInt(strings.Split(v, ".")[1], 10, 64)
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, until := range a.revoked {
		if !now.Before(until) {
			delete(a.revoked, k)
		}
	}
	a.revoked[id] = time.Unix(exp, 0)
}

// page guards a page: without credentials, a browser is sent to the
// login page; a bearer token that is not the operator's is 401.
func (a *auth) page(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := a.identify(r)
		if refuseThrottled(w, s) {
			return
		}
		if !s.ok {
			if s.bearer {
				w.Header().Set("WWW-Authenticate", `Bearer realm="queuety"`)
				http.Error(w, "The bearer token is not the operator token.", http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, s)))
	})
}

// action guards a post: 401 without credentials, 403 with a missing or
// wrong form token or in read-only mode.
func (a *auth) action(readOnly bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := a.identify(r)
		if refuseThrottled(w, s) {
			return
		}
		if !s.ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="queuety"`)
			http.Error(w, "Log in first: the dashboard needs the operator token.", http.StatusUnauthorized)
			return
		}
		if readOnly {
			http.Error(w, "The dashboard is read-only: actions are refused.", http.StatusForbidden)
			return
		}
		if !s.bearer && !a.checkForm(r, s) {
			http.Error(w, "The form's CSRF token is missing or does not belong to this session: reload the page and try again.", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, s)))
	})
}

// checkForm compares the form's csrf field with the session's token.
func (a *auth) checkForm(r *http.Request, s session) bool {
	got := r.PostFormValue("csrf")
	return got != "" && hmac.Equal([]byte(got), []byte(s.csrf))
}

func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	if d.auth.identify(r).ok {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	d.render(w, r, http.StatusOK, "login", view{Title: "Log in", Data: r.URL.Query().Get("next")})
}

func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.PostFormValue("next"))
	if d.cfg.InsecureNoAuth {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	client := clientOf(r)
	if wait := d.auth.failures.wait(client); wait > 0 {
		secs := int((wait + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		d.render(w, r, http.StatusTooManyRequests, "login", view{Title: "Log in",
			Error: fmt.Sprintf("Too many wrong tokens from your address: try again in %d s.", secs), Data: next})
		return
	}
	if !d.auth.validToken(r.PostFormValue("token")) {
		wait := d.auth.failures.fail(client)
		d.log.Info("dashboard: login refused", "remote", r.RemoteAddr, "next_try_in", wait)
		d.render(w, r, http.StatusUnauthorized, "login", view{Title: "Log in", Error: "That is not the operator token.", Data: next})
		return
	}
	d.auth.failures.succeed(client)
	v, exp := d.auth.issue()
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: v, Path: Prefix, Expires: exp,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r),
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		d.auth.revoke(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r)})
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// secure: mark the cookie Secure behind TLS (directly or at a proxy).
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// safeNext keeps a post-login redirect inside the dashboard.
func safeNext(next string) string {
	if !strings.HasPrefix(next, Prefix) || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return Prefix
	}
	return next
}
