package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hibiken/asynq"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/uptrace/bun"
	"go.uber.org/fx"

	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/postgres"
)

// startAdmin serves /healthz, /readyz (the API's handlers and error
// envelope) and /metrics on ADMIN_ADDR.
func startAdmin(lc fx.Lifecycle, cfg config, db *bun.DB, client *asynq.Client, reg *prometheus.Registry, log *slog.Logger) {
	e := httpx.NewServer(httpx.ServerConfig{}, log)
	httpx.RegisterHealth(e, httpx.DefaultReadyTimeout,
		httpx.Check{Name: "postgres", Check: func(ctx context.Context) error { return postgres.Health(ctx, db) }},
		httpx.Check{Name: "redis", Check: func(context.Context) error { return client.Ping() }},
	)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))

	srv := &http.Server{Addr: cfg.AdminAddr, Handler: e, ReadHeaderTimeout: 5 * time.Second}
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln, err := net.Listen("tcp", cfg.AdminAddr)
			if err != nil {
				return err
			}
			go func() {
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error("admin server stopped", "err", err)
				}
			}()
			return nil
		},
		OnStop: srv.Shutdown,
	})
}
