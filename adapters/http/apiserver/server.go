package apiserver

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/core/redaction"
)

// Prefix is where the authenticated API lives.
const Prefix = "/api/v1"

// JWTLeeway is the clock skew tolerated on a bearer token's exp and nbf.
const JWTLeeway = 30 * time.Second

// readTimeout bounds reading a whole request (http.Server.ReadTimeout),
// which the body budget's read deadlines keep.
const readTimeout = 30 * time.Second

// probeRoutes are answered without an access-log line or a span:
// orchestrators and load balancers call them every few seconds.
var probeRoutes = map[string]bool{"/healthz": true, "/readyz": true}

// Registry is where the server registers its metrics and what the admin
// listener's GET /metrics serves; *prometheus.Registry implements it.
type Registry interface {
	prometheus.Registerer
	prometheus.Gatherer
}

// Params configures New.
type Params struct {
	// Logger receives the access log and the error handler's lines. Required.
	Logger *slog.Logger
	// JWTSecret verifies the HS256 bearer tokens of Prefix; at least
	// auth.MinSecretLen bytes. Required.
	JWTSecret []byte
	// JWTPolicy adds optional issuer, audience and lifetime checks.
	JWTPolicy auth.JWTPolicy
	// Metrics gets the access log's failure counter and the request
	// metrics (http_requests_total, http_request_duration_seconds), and is served on
	// Server.Admin's GET /metrics. Default: a new, empty registry.
	Metrics Registry
	// AccessLogHashKey keys the access log's body hashes. Production sets a
	// per-deployment secret; nil leaves the hashes unkeyed.
	AccessLogHashKey []byte
	// AccessLogRules are added to redaction.BuiltinRules: a domain's own
	// sensitive names and allow-list entries. Optional.
	AccessLogRules []redaction.Rule
	// AccessLogBodyCap caps each logged body after redaction. Default:
	// redaction.DefaultMaxBytes.
	AccessLogBodyCap int
	// AccessLogBodyCapFunc, when set, is asked for the cap on every logged
	// body instead (a value that changes at runtime); <= 0 means
	// AccessLogBodyCap.
	AccessLogBodyCapFunc func() int
	// Routes are the domains' access-log policies (full paths, e.g.
	// "/api/v1/topups"); a path listed twice is an error. Unlisted routes
	// log under the default policy.
	Routes []accesslog.Route
	// IdempotencyKeyOnly accepts only Idempotency-Key as an idempotency
	// key, not X-Request-ID (idemhttp.CaptureConfig says when).
	IdempotencyKeyOnly bool
	// Mappers render the domains' errors. idemhttp.MapError is always
	// installed, because New always installs idemhttp.CaptureKey.
	Mappers []httpx.ErrorMapper
	// BodyBudget bounds the request-body bytes in flight at once (503
	// SERVER_BUSY past it). Default: httpx.DefaultBodyBudget.
	BodyBudget int64
	// BodyShare bounds one principal's part of BodyBudget (429
	// BODY_SHARE_EXCEEDED past it); unauthenticated callers share one.
	// Default: httpx.DefaultBodyShare; negative: no shares.
	BodyShare int64
	// BodyMinRate is the slowest a body may arrive, in bytes per second,
	// after BodyRateGrace (408 BODY_TOO_SLOW, reservation released).
	// Default: httpx.DefaultBodyMinRate; negative: no minimum.
	BodyMinRate int64
	// BodyRateGrace is how long a body may send nothing before
	// BodyMinRate applies. Default: httpx.DefaultBodyRateGrace.
	BodyRateGrace time.Duration
	// Checks are GET /readyz's dependencies; an Optional one down is
	// reported as degraded, not unready (dependency_up comes from the same
	// probes, see metrics.ProbeModule).
	Checks []httpx.Check
	// TracerProvider, when set, traces every request but the probes
	// (httpx.Trace) under a server span that continues the caller's
	// traceparent.
	TracerProvider trace.TracerProvider
}

// Server is the assembled API server.
type Server struct {
	// Echo serves the public port: the probes, the caller's routes and
	// API; callers own its listener. It never serves /metrics.
	Echo *echo.Echo
	// Admin serves the admin port (ADMIN_ADDR): GET /healthz, /readyz
	// (the same Health as Echo's, so a drain fails both) and /metrics.
	// It is for the orchestrator and Prometheus only: keep its listener
	// off the Service and the Ingress. Callers own its listener.
	Admin *echo.Echo
	// API is Prefix behind bearer authentication: domains' routes go here.
	API *echo.Group
	// Health serves /healthz and /readyz; Drain it on shutdown.
	Health *httpx.Health
}

// New assembles the API server. It registers GET /healthz and /readyz on
// Echo, and GET /healthz, /readyz and /metrics on Admin; every other route
// is the caller's.
func New(p Params) (*Server, error) {
	if p.Logger == nil {
		return nil, fmt.Errorf("apiserver: Params.Logger is required")
	}
	jwt, err := auth.NewJWT(p.JWTSecret, JWTLeeway, nil)
	if err != nil {
		return nil, err
	}
	jwt = jwt.WithPolicy(p.JWTPolicy)
	policies := make(map[string]accesslog.RoutePolicy, len(p.Routes))
	for _, r := range p.Routes {
		if _, dup := policies[r.Path]; dup {
			return nil, fmt.Errorf("access-log policy for %s registered twice", r.Path)
		}
		policies[r.Path] = r.RoutePolicy
	}
	metrics := p.Metrics
	if metrics == nil {
		metrics = prometheus.NewRegistry()
	}
	failures := accesslog.NewFailureCounter()
	if err := metrics.Register(failures); err != nil {
		return nil, err
	}
	requests, err := newRequestMetrics(metrics)
	if err != nil {
		return nil, err
	}
	access := accesslog.New(accesslog.Config{
		Logger:     p.Logger,
		Redactor:   capped(&redaction.Redactor{Registry: redaction.Default().With(p.AccessLogRules...), HashKey: p.AccessLogHashKey, MaxBytes: p.AccessLogBodyCap}, p.AccessLogBodyCapFunc),
		Routes:     policies,
		Failures:   failures,
		UserIDFunc: auth.UserID,
		Skip:       func(c echo.Context) bool { return probeRoutes[c.Path()] },
	})
	mappers := append([]httpx.ErrorMapper{idemhttp.MapError}, p.Mappers...)
	mw := []echo.MiddlewareFunc{requests.middleware, access}
	if p.TracerProvider != nil {
		mw = append([]echo.MiddlewareFunc{httpx.Trace(p.TracerProvider, func(c echo.Context) bool { return probeRoutes[c.Path()] })}, mw...)
	}
	budget := httpx.NewBodyBudget(httpx.BudgetConfig{
		Budget: p.BodyBudget, Share: p.BodyShare, PrincipalFunc: auth.UserID,
		MinRate: p.BodyMinRate, Grace: p.BodyRateGrace, ReadTimeout: readTimeout,
	})
	if err := metrics.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "http_body_budget_in_use_bytes",
		Help: "Request-body bytes reserved by in-flight requests (HTTP_BODY_BUDGET bounds it).",
	}, func() float64 { return float64(budget.InUse()) })); err != nil {
		return nil, err
	}
	e := httpx.NewServer(httpx.ServerConfig{Middleware: mw, Budget: budget}, p.Logger, mappers...)
	// Keep the client's own X-Request-ID / Idempotency-Key before the
	// request-id middleware normalises it (idempotent create endpoints).
	e.Pre(idemhttp.CaptureKeyWith(idemhttp.CaptureConfig{RequestIDIsKey: !p.IdempotencyKeyOnly}))
	e.Server.ReadHeaderTimeout = 5 * time.Second
	e.Server.ReadTimeout = readTimeout
	e.Server.WriteTimeout = 30 * time.Second
	e.Server.IdleTimeout = 2 * time.Minute

	// dependency_up comes from the probes at scrape time (metrics.ProbeModule).
	health := &httpx.Health{Checks: p.Checks, Logger: p.Logger}
	health.Register(e)
	api := e.Group(Prefix, auth.Middleware(jwt))
	api.RouteNotFound("/*", methodNotAllowed(e)) // after authentication, like every API answer
	api.RouteNotFound("", methodNotAllowed(e))

	// The admin port, as the relay's: the probes and /metrics in the text
	// format, or OpenMetrics to a scraper that asks for it (one format
	// negotiation for both binaries).
	admin := httpx.NewServer(httpx.ServerConfig{}, p.Logger)
	health.Register(admin)
	admin.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(metrics, promhttp.HandlerOpts{Registry: metrics, EnableOpenMetrics: true})))
	return &Server{Echo: e, Admin: admin, API: api, Health: health}, nil
}

// capped returns r, or, with capFunc set, r whose body cap is capFunc's
// answer at each logged body.
func capped(r *redaction.Redactor, capFunc func() int) accesslog.Redactor {
	if capFunc == nil {
		return r
	}
	return dynamicCap{r, capFunc}
}

type dynamicCap struct {
	*redaction.Redactor
	cap func() int
}

func (d dynamicCap) Summarise(p redaction.Policy, b redaction.Body) redaction.Result {
	r := *d.Redactor
	if n := d.cap(); n > 0 {
		r.MaxBytes = n
	}
	return r.Summarise(p, b)
}
