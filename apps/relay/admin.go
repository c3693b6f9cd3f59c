package main

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/fx"

	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/metrics"
	"github.com/july/template/core/ports"
)

// startAdmin serves /healthz, /readyz (every adapter's probe, the API's
// handlers and error envelope) and /metrics on ADMIN_ADDR.
func startAdmin(lc fx.Lifecycle, cfg config, probes []ports.Probe, h metrics.Handler, log *slog.Logger) {
	e := httpx.NewServer(httpx.ServerConfig{}, log)
	checks := make([]httpx.Check, len(probes))
	for i, p := range probes {
		checks[i] = httpx.Check{Name: p.Name, Check: p.Check} // the relay needs both Postgres and Redis
	}
	httpx.RegisterHealth(e, httpx.DefaultReadyTimeout, checks...)
	e.GET("/metrics", echo.WrapHandler(h))
	srv := httpx.NewHTTPServer(&http.Server{Addr: cfg.AdminAddr, Handler: e, ReadHeaderTimeout: 5 * time.Second}, 5*time.Second, log)
	lc.Append(fx.Hook{OnStart: srv.Start, OnStop: srv.Stop})
}
