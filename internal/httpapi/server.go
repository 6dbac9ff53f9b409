package httpapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/sessions"
)

// Defaults of Config.
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultPollTimeout  = 5 * time.Second
	DefaultPollInterval = 250 * time.Millisecond
	// maxPollTimeout bounds a long poll whatever the worker asks for.
	maxPollTimeout = 30 * time.Second
	// MinTokenBytes is the shortest bearer token accepted (after
	// trimming): 16 random bytes cannot be guessed over the network, and
	// nothing slows down failed attempts.
	MinTokenBytes = 16
	// MinTokenDistinct is the fewest different characters a token may
	// hold: a token of 16 bytes with fewer (aaaaaaaaaaaaaaaa,
	// abababababababab, 0000000011111111) was typed, not generated, and
	// is guessed in a few tries. 32 hex digits from openssl rand -hex 16
	// hold fewer than 8 different ones with odds below 1 in 10^14.
	MinTokenDistinct = 8
)

// CheckToken refuses a token that is blank, shorter than MinTokenBytes
// once trimmed, or made of fewer than MinTokenDistinct different
// characters (the header's token is trimmed too, so a token of spaces
// could never match). name is how the caller names the setting.
func CheckToken(name, token string) error {
	t := strings.TrimSpace(token)
	switch {
	case t == "" && token != "":
		return fmt.Errorf("%s is only whitespace: set a random token of at least %d bytes, e.g. from openssl rand -hex 16", name, MinTokenBytes)
	case len(t) < MinTokenBytes:
		return fmt.Errorf("%s is %d bytes: use a random token of at least %d bytes, e.g. from openssl rand -hex 16", name, len(t), MinTokenBytes)
	case distinctChars(t) < MinTokenDistinct:
		return fmt.Errorf("%s holds only %d different characters: a guessable token is refused (at least %d different); use a random one, e.g. from openssl rand -hex 16", name, distinctChars(t), MinTokenDistinct)
	}
	return nil
}

// distinctChars counts the different characters of s.
func distinctChars(s string) int {
	seen := map[rune]bool{}
	for _, r := range s {
		seen[r] = true
	}
	return len(seen)
}

// Config configures a Server. Registry is required; Tasks and Metrics are
// optional (without Tasks the activity-task routes answer 503
// activity_tasks_unavailable; without Metrics operator metrics hold only
// worker_sessions).
type Config struct {
	// Listen is the address Start listens on, e.g. "127.0.0.1:8080"; port
	// 0 picks a free one (see Addr).
	Listen string
	// WorkerToken and OperatorToken are the bearer tokens of the worker
	// and operator planes. Both are required, and must differ, unless
	// InsecureNoAuth is set.
	WorkerToken, OperatorToken string
	// InsecureNoAuth serves every route without a token. Start refuses it
	// on an address that is not loopback.
	InsecureNoAuth bool
	// MaxBodyBytes caps a request body (default 1 MiB); more is refused
	// with 413 payload_too_large.
	MaxBodyBytes int64
	// AdvertisedVersion is the worker protocol version we advertise
	// ("1.13"); requests may send the same major with a minor up to it.
	AdvertisedVersion string
	// StaleAfter is advertised as worker_status.stale_after_seconds. Leave
	// it 0 to advertise the Registry's own threshold, the one that decides.
	StaleAfter time.Duration
	// PollTimeout is how long an activity-task poll waits for work when
	// the request does not say (poll_timeout_seconds, at most 30 s);
	// PollInterval is how often it asks Tasks meanwhile.
	PollTimeout, PollInterval time.Duration

	Registry *sessions.Registry
	Tasks    Tasks
	Metrics  Metrics
	// Prometheus, when set, is served at GET /metrics on the operator
	// plane: the operator token, but no control-plane header, so a
	// Prometheus scrape config needs only its bearer token.
	Prometheus http.Handler
	// UI, when set, is the web dashboard, served at /ui/ (it checks the
	// operator token itself: a login page and a session cookie).
	UI http.Handler
	// Ready decides GET /readyz (nil: ready whenever the process answers).
	// /healthz and /readyz take no token and say only a status word.
	Ready func(ctx context.Context) error
	// Logger gets refusals (debug) and failures (error). The HTTP layer
	// computes no business time itself (the registry and the task runtime
	// do, on their clocks), so it takes no clock.
	Logger *slog.Logger
	// ServerID names this server in cluster info (default: host name).
	ServerID string
	// Version is our release, reported in cluster info.
	Version string
}

// Server serves the worker plane, the operator plane and cluster info.
type Server struct {
	cfg       Config
	log       *slog.Logger
	advertise version
	mux       *http.ServeMux
	handler   http.Handler
	// caps is server_capabilities, encoded once: it depends on Config only.
	caps json.RawMessage

	// quit ends long polls at Stop, so shutdown does not wait for them.
	quit     chan struct{}
	quitOnce sync.Once

	mu   sync.Mutex
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// New validates cfg and builds the Server.
func New(cfg Config) (*Server, error) {
	if cfg.Registry == nil {
		return nil, errors.New("httpapi: Config.Registry is required (sessions.New over the store)")
	}
	if !cfg.InsecureNoAuth {
		cfg.WorkerToken, cfg.OperatorToken = strings.TrimSpace(cfg.WorkerToken), strings.TrimSpace(cfg.OperatorToken)
		// The operator token is required; the worker token is not: an
		// operator who runs no external workers leaves it unset and the
		// worker plane is off (its routes answer 403 saying so).
		if cfg.OperatorToken == "" {
			return nil, errors.New("httpapi: an operator token is required (or run without auth on a loopback address)")
		}
		if cfg.WorkerToken == cfg.OperatorToken {
			return nil, errors.New("httpapi: the worker token and the operator token must differ, or any worker could read the operator plane")
		}
		for _, t := range []struct{ name, token string }{{"httpapi: the worker token", cfg.WorkerToken}, {"httpapi: the operator token", cfg.OperatorToken}} {
			if t.token == "" {
				continue
			}
			if err := CheckToken(t.name, t.token); err != nil {
				return nil, err
			}
		}
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.AdvertisedVersion == "" {
		cfg.AdvertisedVersion = DefaultAdvertisedVersion
	}
	adv, ok := parseVersion(cfg.AdvertisedVersion)
	if !ok {
		return nil, fmt.Errorf("httpapi: advertised worker protocol version %q is not major.minor like %q", cfg.AdvertisedVersion, DefaultAdvertisedVersion)
	}
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = cfg.Registry.StaleAfter()
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = DefaultPollTimeout
	}
	cfg.PollTimeout = min(cfg.PollTimeout, maxPollTimeout)
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ServerID == "" {
		cfg.ServerID = hostname()
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Server{cfg: cfg, log: cfg.Logger, advertise: adv, quit: make(chan struct{})}
	caps, err := marshal(s.serverCapabilities(s.sessionsAvailable()))
	if err != nil {
		return nil, fmt.Errorf("httpapi: encoding server capabilities: %w", err)
	}
	s.caps = caps
	s.routes()
	return s, nil
}

// sessionsAvailable reports whether our advertised version has sessions.
func (s *Server) sessionsAvailable() bool {
	minimum, _ := parseVersion(SessionsMinimumVersion)
	return !s.advertise.less(minimum)
}

// Handler is the whole API, for tests and for mounting elsewhere.
func (s *Server) Handler() http.Handler { return s.handler }

// Start listens on Config.Listen and serves in the background. It fails
// at once when the address cannot be bound, or when the server has no
// auth and the address is not loopback.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("httpapi: server already started")
	}
	if s.cfg.InsecureNoAuth && !Loopback(s.cfg.Listen) {
		return fmt.Errorf("httpapi: refusing to serve without auth on %q: only a loopback address (127.0.0.1, ::1, localhost) may run without tokens", s.cfg.Listen)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("httpapi: listen on %q: %w", s.cfg.Listen, err)
	}
	s.ln = ln
	if !Loopback(s.cfg.Listen) {
		s.log.Warn("serving plain HTTP on a non-loopback address: bearer tokens and bodies cross the network unencrypted; put a TLS-terminating proxy in front, or listen on 127.0.0.1",
			"listen", s.cfg.Listen)
	}
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		// A long poll may hold a response for maxPollTimeout.
		WriteTimeout: maxPollTimeout + 30*time.Second,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:  func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	s.done = make(chan struct{})
	srv, done := s.srv, s.done
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "err", err)
		}
	}()
	s.log.Info("http api listening", "addr", ln.Addr().String(), "auth", !s.cfg.InsecureNoAuth)
	return nil
}

// Addr is the bound address after Start (the real port when Listen asked
// for port 0), or "" before.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Stop ends long polls at once (they answer an empty poll), then waits for
// in-flight requests until ctx ends, then closes what is left.
func (s *Server) Stop(ctx context.Context) error {
	s.quitOnce.Do(func() { close(s.quit) })
	s.mu.Lock()
	srv, done := s.srv, s.done
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Shutdown(ctx)
	if err != nil {
		_ = srv.Close()
	}
	<-done
	return err
}

// Loopback reports whether a listen address binds only the loopback
// interface. An empty host (":8080") binds every interface, so it is not.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// plane is who may call a route.
type plane int

const (
	planeWorker plane = iota
	planeOperator
	planeCluster // either token
	planeScrape  // the operator token alone: no protocol header, no namespace
)

// request is what the shared checks learned about a request.
type request struct {
	ns      string
	version version // worker plane: the version the request declared
}

// sessionsOK reports whether this request may use sessions: the server
// advertises ≥ 1.8 and so did the request (§1.14).
func (s *Server) sessionsOK(rq *request) bool {
	minimum, _ := parseVersion(SessionsMinimumVersion)
	return s.sessionsAvailable() && !rq.version.less(minimum)
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, rq *request) *apiError

func (s *Server) routes() {
	mux := http.NewServeMux()
	w := func(h handlerFunc) http.Handler { return s.guard(planeWorker, h) }
	o := func(h handlerFunc) http.Handler { return s.guard(planeOperator, h) }

	mux.Handle("POST /api/worker/register", w(s.register))
	mux.Handle("POST /api/worker/heartbeat", w(s.heartbeatWorker))
	mux.Handle("DELETE /api/worker/registrations/{workerId}", w(s.deregister))
	mux.Handle("POST /api/worker/sessions", w(s.createSession))
	mux.Handle("POST /api/worker/sessions/{sessionId}/heartbeat", w(s.heartbeatSession))
	mux.Handle("DELETE /api/worker/sessions/{sessionId}", w(s.closeSession))
	mux.Handle("POST /api/worker/activity-tasks/poll", w(s.pollTask))
	mux.Handle("POST /api/worker/activity-tasks/{taskId}/heartbeat", w(s.heartbeatTask))
	mux.Handle("POST /api/worker/activity-tasks/{taskId}/complete", w(s.completeTask))
	mux.Handle("POST /api/worker/activity-tasks/{taskId}/fail", w(s.failTask))

	mux.Handle("GET /api/worker-sessions", o(s.listSessions))
	mux.Handle("GET /api/worker-sessions/{sessionId}", o(s.showSession))
	mux.Handle("GET /api/system/operator-metrics", o(s.operatorMetrics))

	mux.Handle("GET /api/cluster/info", s.guard(planeCluster, s.clusterInfo))
	if s.cfg.Prometheus != nil {
		mux.Handle("GET /metrics", s.guard(planeScrape, func(w http.ResponseWriter, r *http.Request, _ *request) *apiError {
			s.cfg.Prometheus.ServeHTTP(w, r)
			return nil
		}))
	}
	if s.cfg.UI != nil {
		mux.Handle("/ui/", s.cfg.UI)
		mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
		// A person who types the server's address lands on the dashboard
		// (302: the root may serve something else another day).
		mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusFound))
	}
	mux.Handle("GET /healthz", HealthHandler())
	mux.Handle("GET /readyz", ReadyHandler(s.cfg.Ready))
	mux.Handle("/", http.HandlerFunc(s.notFound))
	s.mux = mux
	s.handler = http.HandlerFunc(s.serve)
	if s.cfg.InsecureNoAuth {
		s.handler = LocalHostGuard(s.cfg.Listen, s.handler)
	}
}

// emptySegment finds paths whose id segment is empty
// (/api/worker/sessions//heartbeat): ServeMux would answer those with a
// redirect to a cleaned path, which a worker cannot act on. They get the
// route's own refusal instead.
var emptySegment = regexp.MustCompile(`^/api/worker/(sessions|activity-tasks)/(/.*)?$`)

func (s *Server) serve(rw http.ResponseWriter, r *http.Request) {
	w := &trackingWriter{ResponseWriter: rw}
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
		// A bug must not cost the worker its JSON answer (or the server).
		s.log.Error("handler panicked", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
		if !w.wrote {
			s.writeError(w, r, planeOf(r.URL.Path), &request{version: s.advertise}, internal(fmt.Errorf("panic: %v", v)))
		}
	}()
	if m := emptySegment.FindStringSubmatch(r.URL.Path); m != nil {
		kind := m[1]
		s.guard(planeWorker, func(w http.ResponseWriter, r *http.Request, rq *request) *apiError {
			if kind == "sessions" {
				return sessionError(sessions.ReasonInvalidWorkerSession, "The worker session id in the path is empty.")
			}
			return taskIDError()
		}).ServeHTTP(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// trackingWriter remembers whether a response was started.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackingWriter) WriteHeader(code int) { t.wrote = true; t.ResponseWriter.WriteHeader(code) }

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the real writer.
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// notFound answers unknown routes and wrong methods in the plane's shape.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	e := refuse(http.StatusNotFound, ReasonRouteNotFound, fmt.Sprintf("No route %s %s.", r.Method, r.URL.Path))
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		e = refuse(http.StatusMethodNotAllowed, ReasonMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s; use %s.", r.Method, r.URL.Path, strings.Join(allow, " or ")))
	}
	s.writeError(w, r, planeOf(r.URL.Path), &request{version: s.advertise}, e)
}

func planeOf(path string) plane {
	if path == "/api/worker" || strings.HasPrefix(path, "/api/worker/") {
		return planeWorker
	}
	return planeOperator
}

// guard runs the checks every route shares, in the server's order: the
// token, then the protocol header, then the namespace; then the handler.
func (s *Server) guard(p plane, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rq := &request{version: s.advertise}
		if e := s.authorize(r, p); e != nil {
			s.writeError(w, r, p, rq, e)
			return
		}
		if p == planeScrape {
			if e := h(w, r, rq); e != nil {
				s.writeError(w, r, p, rq, e)
			}
			return
		}
		switch p {
		case planeWorker:
			v, e := s.checkWorkerProtocol(r)
			if e != nil {
				s.writeError(w, r, p, rq, e)
				return
			}
			rq.version = v
		case planeOperator:
			if e := checkControlPlane(r); e != nil {
				s.writeError(w, r, p, rq, e)
				return
			}
		}
		ns, e := namespace(r)
		if e != nil {
			s.writeError(w, r, p, rq, e)
			return
		}
		rq.ns = ns
		if e := h(w, r, rq); e != nil {
			s.writeError(w, r, p, rq, e)
		}
	})
}

// authorize checks the bearer token against the plane's: a missing or
// unknown token is 401, the other plane's token 403.
func (s *Server) authorize(r *http.Request, p plane) *apiError {
	if s.cfg.InsecureNoAuth {
		return nil
	}
	// The scheme is case-insensitive (RFC 7235 §2.1): Bearer, bearer, BEARER.
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return refuse(http.StatusUnauthorized, ReasonUnauthorized, "Missing bearer token: send Authorization: Bearer <token>.")
	}
	token = strings.TrimSpace(token)
	if p == planeWorker && s.cfg.WorkerToken == "" {
		return refuse(http.StatusForbidden, ReasonForbidden, "The worker plane is off: this server was started without a worker token (QUEUETY_WORKER_TOKEN).")
	}
	isWorker := equal(token, s.cfg.WorkerToken)
	isOperator := equal(token, s.cfg.OperatorToken)
	switch {
	case !isWorker && !isOperator:
		return refuse(http.StatusUnauthorized, ReasonUnauthorized, "The bearer token is not valid for this server.")
	case p == planeWorker && !isWorker:
		return refuse(http.StatusForbidden, ReasonForbidden, "This route belongs to the worker plane; use the worker token (QUEUETY_WORKER_TOKEN).")
	case (p == planeOperator || p == planeScrape) && !isOperator:
		return refuse(http.StatusForbidden, ReasonForbidden, "This route belongs to the operator plane; use the operator token (QUEUETY_OPERATOR_TOKEN).")
	}
	return nil
}

// equal compares tokens in constant time.
func equal(a, b string) bool {
	return b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// checkWorkerProtocol applies §1.12: same major, minor no newer than ours.
func (s *Server) checkWorkerProtocol(r *http.Request) (version, *apiError) {
	raw := strings.TrimSpace(r.Header.Get(HeaderWorkerProtocol))
	adv := s.advertise.String()
	if raw == "" {
		return version{}, refuse(http.StatusBadRequest, ReasonMissingProtocolVersion, "Missing worker protocol version header.",
			field{"supported_version", adv}, field{"requested_version", nil},
			field{"remediation", fmt.Sprintf("Send the %s: %s header on worker protocol requests.", HeaderWorkerProtocol, adv)})
	}
	v, ok := parseVersion(raw)
	if !ok || v.major != s.advertise.major || s.advertise.less(v) {
		return version{}, refuse(http.StatusBadRequest, ReasonUnsupportedProtocolVersion, "Unsupported worker protocol version.",
			field{"supported_version", adv}, field{"requested_version", raw},
			field{"remediation", fmt.Sprintf("Worker requested protocol version %s; this server accepts %d.0 through %s. Upgrade the server or send a version it accepts.", raw, s.advertise.major, adv)})
	}
	return v, nil
}

func checkControlPlane(r *http.Request) *apiError {
	raw := strings.TrimSpace(r.Header.Get(HeaderControlPlane))
	remedy := fmt.Sprintf("Send the %s: %s header on control-plane requests.", HeaderControlPlane, ControlPlaneVersion)
	switch raw {
	case ControlPlaneVersion:
		return nil
	case "":
		return refuse(http.StatusBadRequest, ReasonMissingControlPlane, "Missing control-plane version header.",
			field{"supported_version", ControlPlaneVersion}, field{"requested_version", nil}, field{"remediation", remedy})
	}
	return refuse(http.StatusBadRequest, ReasonUnsupportedControlPlane, "Unsupported control-plane version.",
		field{"supported_version", ControlPlaneVersion}, field{"requested_version", raw}, field{"remediation", remedy})
}

var namespacePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// namespace reads X-Namespace; absent means "default".
func namespace(r *http.Request) (string, *apiError) {
	ns := strings.TrimSpace(r.Header.Get(HeaderNamespace))
	if ns == "" {
		return DefaultNamespace, nil
	}
	if !namespacePattern.MatchString(ns) {
		return "", refuse(http.StatusBadRequest, ReasonInvalidNamespace,
			fmt.Sprintf("Namespace %q is not valid: use 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit.", ns))
	}
	return ns, nil
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "queuety"
	}
	return h
}
