package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/rueidis"
	"github.com/uptrace/bun"
	"go.uber.org/fx"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/configapi"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/redis"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redaction"
)

// apiPrefix is where the authenticated API lives.
const apiPrefix = "/api/v1"

// probeRoutes are answered without an access-log line: orchestrators and
// scrapers call them every few seconds.
var probeRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// accessPolicies are the access-log body rules of the API's routes. A
// single key's route is opaque (size and keyed hash only): a PUT body holds
// the new value under "value", which no key-name rule recognises as
// sensitive, and the key may be a secret.
var accessPolicies = map[string]accesslog.RoutePolicy{
	apiPrefix + configapi.RouteList: {Policy: redaction.PolicyDefault},
	apiPrefix + configapi.RouteKey:  {Policy: redaction.PolicyOpaque},
}

var httpOptions = fx.Options(
	fx.Provide(
		fx.Annotate(newServer, fx.ParamTags(``, ``, ``, ``, `group:"error_mappers"`, `group:"access_routes"`)),
		newGuard,
		fx.Annotate(newAPIGroup, fx.ResultTags(`name:"api_v1"`)),
		fx.Annotate(func() httpx.ErrorMapper { return configapi.MapError }, fx.ResultTags(`group:"error_mappers"`)),
		fx.Annotate(func() httpx.ErrorMapper { return idemhttp.MapError }, fx.ResultTags(`group:"error_mappers"`)),
	),
	fx.Invoke(
		registerProbes,
		fx.Annotate(registerConfigAPI, fx.ParamTags(`name:"api_v1"`)),
		startHTTP,
	),
)

// newServer builds the echo server: request ids, the redacting access log,
// recovery, the body limit and the one error handler with every mapper.
//
// Domain modules add their routes' access-log policies to the
// `group:"access_routes"` value group (accesslog.Route); a route with no
// entry gets the default policy.
func newServer(cfg config, log *slog.Logger, metrics *prometheus.Registry, svc *configsvc.Service, mappers []httpx.ErrorMapper, routes []accesslog.Route) (*echo.Echo, error) {
	policies := make(map[string]accesslog.RoutePolicy, len(accessPolicies)+len(routes))
	for path, p := range accessPolicies {
		policies[path] = p
	}
	for _, r := range routes {
		if _, dup := policies[r.Path]; dup {
			return nil, fmt.Errorf("access-log policy for %s registered twice", r.Path)
		}
		policies[r.Path] = r.RoutePolicy
	}
	failures := accesslog.NewFailureCounter()
	if err := metrics.Register(failures); err != nil {
		return nil, err
	}
	access := accesslog.New(accesslog.Config{
		Logger:     log,
		Redactor:   &redaction.Redactor{HashKey: cfg.AccessLogHashKey, MaxBytes: bodyCap(svc)},
		Routes:     policies,
		Failures:   failures,
		UserIDFunc: auth.UserID,
		Skip:       func(c echo.Context) bool { return probeRoutes[c.Path()] },
	})
	e := httpx.NewServer(httpx.ServerConfig{Middleware: []echo.MiddlewareFunc{access}}, log, mappers...)
	// Keep the client's own X-Request-ID / Idempotency-Key before the
	// request-id middleware normalises it (idempotent create endpoints).
	e.Pre(idemhttp.CaptureKey())
	e.Server.ReadHeaderTimeout = 5 * time.Second
	e.Server.ReadTimeout = 30 * time.Second
	e.Server.WriteTimeout = 30 * time.Second
	e.Server.IdleTimeout = 2 * time.Minute
	return e, nil
}

// newGuard is the Redis short guard idempotent endpoints may use to turn
// concurrent duplicates away early; Postgres still decides.
func newGuard(client rueidis.Client) (ports.Guard, error) {
	return redis.NewGuard(client, redis.GuardConfig{})
}

// newAPIGroup is /api/v1 behind bearer authentication.
func newAPIGroup(e *echo.Echo, cfg config) (*echo.Group, error) {
	jwt, err := auth.NewJWT(cfg.JWTSecret, 30*time.Second, nil)
	if err != nil {
		return nil, err
	}
	return e.Group(apiPrefix, auth.Middleware(jwt)), nil
}

func registerProbes(e *echo.Echo, db *bun.DB, client rueidis.Client, metrics *prometheus.Registry) {
	httpx.RegisterHealth(e, 0,
		httpx.Check{Name: "postgres", Check: func(ctx context.Context) error { return postgres.Health(ctx, db) }},
		httpx.Check{Name: "redis", Check: func(ctx context.Context) error {
			return client.Do(ctx, client.B().Ping().Build()).Error()
		}},
	)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(metrics, promhttp.HandlerOpts{Registry: metrics})))
}

func registerConfigAPI(g *echo.Group, svc *configsvc.Service, log *slog.Logger) {
	configapi.Register(g, svc, log)
}

// startHTTP listens on HTTP_ADDR when the app starts (so a taken port fails
// the start) and drains in-flight requests for SHUTDOWN_TIMEOUT on stop.
func startHTTP(lc fx.Lifecycle, cfg config, e *echo.Echo, log *slog.Logger) {
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln, err := net.Listen("tcp", cfg.HTTPAddr)
			if err != nil {
				return err
			}
			e.Listener = ln
			go func() {
				if err := e.StartServer(e.Server); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error("http server stopped", "err", err)
				}
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, cfg.ShutdownTimeout)
			defer cancel()
			return e.Shutdown(ctx)
		},
	})
}

// bodyCap is the access log's per-body cap after redaction, from the
// registered key http.access_log.body_cap_bytes, read once at start (a
// change applies on restart); its registered default is 50 KB.
func bodyCap(svc *configsvc.Service) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := svc.Value(ctx, configsvc.KeyAccessLogBodyBytes)
	if err != nil || v.Int() <= 0 {
		return redaction.DefaultMaxBytes
	}
	return int(v.Int())
}
