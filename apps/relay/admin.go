package main

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/fx"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/metrics"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/core/ports"
)

// adminServer is the relay's ADMIN_ADDR listener.
type adminServer struct{ *httpx.HTTPServer }

// newAdmin serves /healthz, /readyz (every adapter's probe, the API's
// handlers and error envelope) and /metrics on ADMIN_ADDR. On stop it
// fails /readyz for SHUTDOWN_DRAIN_DELAY while the relay loops and the
// worker keep running (fx stops the admin server first: it starts last),
// then the loops finish their batches and the worker waits for in-flight
// tasks up to SHUTDOWN_TIMEOUT.
func newAdmin(cfg config, probes []ports.Probe, h metrics.Handler, log *slog.Logger) adminServer {
	e := httpx.NewServer(httpx.ServerConfig{}, log)
	checks := make([]httpx.Check, len(probes))
	for i, p := range probes {
		checks[i] = httpx.Check{Name: p.Name, Check: p.Check} // the relay needs both Postgres and Redis
	}
	health := &httpx.Health{Timeout: httpx.DefaultReadyTimeout, Checks: checks, Logger: log}
	health.Register(e)
	e.GET("/metrics", echo.WrapHandler(h))
	if cfg.AdminPprof {
		httpx.RegisterPprof(e)
	}
	srv := httpx.NewHTTPServer(&http.Server{Addr: cfg.AdminAddr, Handler: e, ReadHeaderTimeout: 5 * time.Second}, 5*time.Second, log)
	srv.SetDrain(cfg.DrainDelay, health.Drain)
	return adminServer{srv}
}

// startAdmin starts the admin server with the app.
func startAdmin(lc fx.Lifecycle, srv adminServer) {
	lc.Append(fx.Hook{OnStart: srv.Start, OnStop: srv.Stop})
}

// newProbes are the dependencies /readyz and dependency_up check: the
// database and the queue's Redis.
func newProbes(pg postgres.Probe, q queue.Probe) []ports.Probe {
	return []ports.Probe{pg.Probe, q.Probe}
}

// adminOption wires the admin server and the probes it checks.
var adminOption = fx.Options(
	fx.Provide(newProbes, newAdmin),
	fx.Invoke(startAdmin),
)
