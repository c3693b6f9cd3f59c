package main

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"
	"go.uber.org/fx"

	"github.com/july/template/adapters/http/apiserver"
	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/confighttp"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/redis"
	"github.com/july/template/adapters/tracing"
	"github.com/july/template/apps/domain"
	"github.com/july/template/apps/internal/domains"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redaction"
	"github.com/july/template/docs"
)

var httpOptions = fx.Options(
	fx.Provide(newProbes, newDomainAPIs, newServerParams),
	apiserver.Module,
	fx.Invoke(
		registerConfigAPI,
		registerDomainAPIs,
		registerOpenAPI,
		startAdmin, // before startHTTP, so it stops after the public port drained
		startHTTP,
	),
	fx.Provide(newHTTPServer, newAdmin),
)

// newProbes are the dependencies /readyz and dependency_up check.
func newProbes(pg postgres.Probe, rd redis.Probe) []ports.Probe {
	return []ports.Probe{pg.Probe, rd.Probe}
}

// domainAPIs are the HTTP sides of the service's domains
// (apps/internal/domains.All), in list order.
type domainAPIs []domain.API

// domainDeps is what apps/api gives every domain (domain.APIDeps).
type domainDeps struct {
	fx.In
	DB      *bun.DB
	Clock   ports.Clock
	Config  *configsvc.Service
	Guard   ports.Guard
	Counter ports.WindowCounter
	Logger  *slog.Logger
	Env     config
}

func newDomainAPIs(p domainDeps) (domainAPIs, error) {
	return domain.BuildAPI(domains.All(), domain.APIDeps{DB: p.DB, Clock: p.Clock, Config: p.Config, Guard: p.Guard, Counter: p.Counter, Logger: p.Logger,
		Settings: p.Env.DomainEnv})
}

// registerDomainAPIs adds every domain's handlers to the authenticated
// /api/v1 group.
func registerDomainAPIs(s *apiserver.Server, apis domainAPIs) {
	for _, a := range apis {
		if a.Register != nil {
			a.Register(s.API)
		}
	}
}

// serverParams are newServerParams' inputs.
type serverParams struct {
	fx.In
	Config  config
	Logger  *slog.Logger
	Metrics *prometheus.Registry
	Service *configsvc.Service
	Probes  []ports.Probe
	Tracing *tracing.Provider
	Domains domainAPIs
}

// newServerParams feeds apiserver.Module from the environment, the stored
// access-log body cap, every adapter's readiness probe, and the
// access-log policies and error mappers of the config API, of a Postgres
// outage and of every domain, in that order.
func newServerParams(in serverParams) apiserver.Params {
	cfg, svc, probes, tp := in.Config, in.Service, in.Probes, in.Tracing
	checks := make([]httpx.Check, len(probes))
	for i, p := range probes {
		checks[i] = httpx.Check{Name: p.Name, Check: p.Check, Optional: optionalDeps[p.Name]}
	}
	routes := confighttp.AccessRoutes()
	mappers := []httpx.ErrorMapper{confighttp.MapError, mapPostgresDown}
	for _, a := range in.Domains {
		routes = append(routes, a.AccessRoutes...)
		if a.ErrorMapper != nil {
			mappers = append(mappers, a.ErrorMapper)
		}
	}
	params := apiserver.Params{
		Logger:               in.Logger,
		JWTSecret:            cfg.JWTSecret,
		BodyBudget:           cfg.BodyBudget,
		BodyShare:            cfg.BodyShare,
		BodyMinRate:          cfg.BodyMinRate,
		BodyRateGrace:        cfg.BodyRateGrace,
		JWTPolicy:            auth.JWTPolicy{Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience, MaxLifetime: cfg.JWTMaxLifetime},
		Metrics:              in.Metrics,
		AccessLogHashKey:     cfg.AccessLogHashKey,
		AccessLogBodyCap:     redaction.DefaultMaxBytes,
		AccessLogBodyCapFunc: bodyCap(svc, cmp.Or(cfg.ConfigRefresh, ConfigRefresh)),
		Checks:               checks,
		Routes:               routes,
		Mappers:              mappers,
		IdempotencyKeyOnly:   cfg.IdemKeyOnly,
	}
	if tp.Enabled() { // off: no middleware at all
		params.TracerProvider = tp
	}
	return params
}

// mapPostgresDown renders every error the Postgres adapter classifies as
// an outage (including a domain handler's raw RunInTx error) as 503
// DEPENDENCY_UNAVAILABLE.
func mapPostgresDown(err error) (*httpx.Error, bool) {
	if postgres.IsUnavailable(err) {
		return httpx.DependencyUnavailable(err), true
	}
	return nil, false
}

// optionalDeps are the probes the API serves without, reported as degraded
// by /readyz instead of unready: with Redis down config reads fall back to
// Postgres and Postgres decides creates (the idempotency guard is a
// shortcut only), so a Redis outage must not pull every pod.
var optionalDeps = map[string]bool{"redis": true}

// registerConfigAPI bounds rejected config updates per principal in Redis
// (in-process while Redis is down), counted by
// config_update_rate_limited_total.
func registerConfigAPI(s *apiserver.Server, svc *configsvc.Service, log *slog.Logger, counter ports.WindowCounter, metrics *prometheus.Registry) error {
	limited := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "config_update_rate_limited_total",
		Help: "Config updates answered 429 because their principal's updates were rejected too often.",
	})
	if err := metrics.Register(limited); err != nil {
		return err
	}
	confighttp.Register(s.API, svc, log, confighttp.Options{RejectLimit: &confighttp.RejectLimit{
		Counter: counter, OnLimited: limited.Inc,
	}})
	return nil
}

// registerOpenAPI serves the HTTP contract, docs/openapi.yaml, at
// GET /openapi.yaml (no token: it is the public contract).
func registerOpenAPI(s *apiserver.Server) {
	s.Echo.GET("/openapi.yaml", func(c echo.Context) error {
		return c.Blob(http.StatusOK, "application/yaml", docs.OpenAPI)
	})
}

// adminServer is the api's ADMIN_ADDR listener: /metrics, /healthz and
// /readyz (apiserver.Server.Admin), as the relay serves them, so the
// scrape never shares the public port, the Service or the Ingress with
// /api/v1.
type adminServer struct{ *httpx.HTTPServer }

func newAdmin(cfg config, s *apiserver.Server, log *slog.Logger) adminServer {
	if cfg.AdminPprof {
		httpx.RegisterPprof(s.Admin)
	}
	return adminServer{httpx.NewHTTPServer(&http.Server{Addr: cfg.AdminAddr, Handler: s.Admin, ReadHeaderTimeout: 5 * time.Second}, 5*time.Second, log)}
}

// startAdmin listens on ADMIN_ADDR when the app starts (a taken port fails
// the start). It starts before and stops after the public listener, so
// Prometheus still scrapes a draining api; its /readyz shares the public
// port's drain (apiserver.Server.Health).
func startAdmin(lc fx.Lifecycle, srv adminServer) {
	lc.Append(fx.Hook{OnStart: srv.Start, OnStop: srv.Stop})
}

// startHTTP listens on HTTP_ADDR when the app starts (so a taken port fails
// the start) and, on stop, drains (newHTTPServer).
func startHTTP(lc fx.Lifecycle, srv *httpx.HTTPServer) {
	lc.Append(fx.Hook{OnStart: srv.Start, OnStop: srv.Stop})
}

// newHTTPServer stops in two steps on SIGTERM: /readyz fails for
// SHUTDOWN_DRAIN_DELAY while every request is still served, then the
// listener closes and in-flight requests get SHUTDOWN_TIMEOUT.
func newHTTPServer(cfg config, s *apiserver.Server, log *slog.Logger) *httpx.HTTPServer {
	e := s.Echo
	e.Server.Addr, e.Server.Handler = cfg.HTTPAddr, e
	srv := httpx.NewHTTPServer(e.Server, cfg.ShutdownTimeout, log)
	srv.SetDrain(cfg.DrainDelay, s.Health.Drain)
	return srv
}

// bodyCap is the access log's per-body cap after redaction, from the
// registered key http.access_log.body_cap_bytes (default 50 KB). It is
// re-read through configsvc (cache, then Postgres) at most every refresh,
// so a change applies without a restart within that bound.
func bodyCap(svc *configsvc.Service, refresh time.Duration) func() int {
	var mu sync.Mutex
	var cur int
	var next time.Time
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); now.After(next) {
			next = now.Add(refresh)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			v, err := svc.Value(ctx, configsvc.KeyAccessLogBodyBytes)
			cancel()
			if err == nil && v.Int() > 0 {
				cur = int(v.Int())
			} else if cur == 0 {
				cur = redaction.DefaultMaxBytes
			}
		}
		return cur
	}
}

// ConfigRefresh bounds how long the API applies a changed registered key
// late (well inside the config cache's 5-minute TTL).
const ConfigRefresh = 30 * time.Second
