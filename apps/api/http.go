package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/uptrace/bun"
	"go.uber.org/fx"

	"github.com/july/template/adapters/http/apiserver"
	"github.com/july/template/adapters/http/configapi"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/redis"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redaction"
	"github.com/july/template/internal/syskeys"
)

var httpOptions = fx.Options(
	fx.Provide(
		newServerParams,
		newGuard,
		fx.Annotate(configapi.AccessRoutes, fx.ResultTags(`group:"access_routes,flatten"`)),
		fx.Annotate(func() httpx.ErrorMapper { return configapi.MapError }, fx.ResultTags(`group:"error_mappers"`)),
	),
	apiserver.Module,
	fx.Invoke(
		fx.Annotate(registerConfigAPI, fx.ParamTags(`name:"api_v1"`)),
		startHTTP,
	),
)

// newServerParams feeds apiserver.Module from the environment, the stored
// access-log body cap and the readiness checks of Postgres and Redis.
// Domain modules add their routes' access-log policies to the
// `group:"access_routes"` value group (accesslog.Route) and their mappers
// to `group:"error_mappers"`.
func newServerParams(cfg config, log *slog.Logger, metrics *prometheus.Registry, store *postgres.ConfigStore, db *bun.DB, client rueidis.Client) apiserver.Params {
	return apiserver.Params{
		Logger:           log,
		JWTSecret:        cfg.JWTSecret,
		Metrics:          metrics,
		AccessLogHashKey: cfg.AccessLogHashKey,
		AccessLogBodyCap: bodyCap(store, log),
		Checks: []httpx.Check{
			{Name: "postgres", Check: func(ctx context.Context) error { return postgres.Health(ctx, db) }},
			{Name: "redis", Check: func(ctx context.Context) error {
				return client.Do(ctx, client.B().Ping().Build()).Error()
			}},
		},
	}
}

// newGuard is the Redis short guard idempotent endpoints may use to turn
// concurrent duplicates away early; Postgres still decides.
func newGuard(client rueidis.Client) (ports.Guard, error) {
	return redis.NewGuard(client, redis.GuardConfig{})
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
func bodyCap(store *postgres.ConfigStore, log *slog.Logger) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, alert, err := syskeys.Startup(ctx, store, syskeys.AccessLogBodyBytes)
	if alert != nil {
		log.Error(alert.Message, "alert_code", alert.Code, "config_key", alert.Key, "component", "access-log")
	}
	if err != nil || v.Int() <= 0 {
		return redaction.DefaultMaxBytes
	}
	return int(v.Int())
}
