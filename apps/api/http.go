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
	"go.uber.org/fx"

	"github.com/july/template/adapters/http/apiserver"
	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/configapi"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/redis"
	"github.com/july/template/adapters/tracing"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redaction"
	"github.com/july/template/docs"
)

var httpOptions = fx.Options(
	fx.Provide(
		newProbes,
		newServerParams,
		fx.Annotate(configapi.AccessRoutes, fx.ResultTags(`group:"access_routes,flatten"`)),
		fx.Annotate(func() httpx.ErrorMapper { return configapi.MapError }, fx.ResultTags(`group:"error_mappers"`)),
		fx.Annotate(func() httpx.ErrorMapper { return mapPostgresDown }, fx.ResultTags(`group:"error_mappers"`)),
	),
	apiserver.Module,
	fx.Invoke(
		fx.Annotate(registerConfigAPI, fx.ParamTags(`name:"api_v1"`)),
		registerOpenAPI,
		startHTTP,
	),
	fx.Provide(newHTTPServer),
)

// newProbes are the dependencies /readyz and dependency_up check.
func newProbes(pg postgres.Probe, rd redis.Probe) []ports.Probe {
	return []ports.Probe{pg.Probe, rd.Probe}
}

// newServerParams feeds apiserver.Module from the environment, the stored
// access-log body cap and every adapter's readiness probe.
// Domain modules add their routes' access-log policies to the
// `group:"access_routes"` value group (accesslog.Route) and their mappers
// to `group:"error_mappers"`.
func newServerParams(cfg config, log *slog.Logger, metrics *prometheus.Registry, svc *configsvc.Service, probes []ports.Probe, tp *tracing.Provider) apiserver.Params {
	checks := make([]httpx.Check, len(probes))
	for i, p := range probes {
		checks[i] = httpx.Check{Name: p.Name, Check: p.Check, Optional: optionalDeps[p.Name]}
	}
	params := apiserver.Params{
		Logger:               log,
		JWTSecret:            cfg.JWTSecret,
		BodyBudget:           cfg.BodyBudget,
		BodyShare:            cfg.BodyShare,
		BodyMinRate:          cfg.BodyMinRate,
		BodyRateGrace:        cfg.BodyRateGrace,
		JWTPolicy:            auth.JWTPolicy{Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience, MaxLifetime: cfg.JWTMaxLifetime},
		Metrics:              metrics,
		AccessLogHashKey:     cfg.AccessLogHashKey,
		AccessLogBodyCap:     redaction.DefaultMaxBytes,
		AccessLogBodyCapFunc: bodyCap(svc, cmp.Or(cfg.ConfigRefresh, ConfigRefresh)),
		Checks:               checks,
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
func registerConfigAPI(g *echo.Group, svc *configsvc.Service, log *slog.Logger, counter ports.WindowCounter, metrics *prometheus.Registry) error {
	limited := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "config_update_rate_limited_total",
		Help: "Config updates answered 429 because their principal's updates were rejected too often.",
	})
	if err := metrics.Register(limited); err != nil {
		return err
	}
	configapi.Register(g, svc, log, configapi.Options{RejectLimit: &configapi.RejectLimit{
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
