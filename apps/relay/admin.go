package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/uptrace/bun"
	"go.uber.org/fx"

	"github.com/july/template/adapters/postgres"
)

// startAdmin serves /healthz, /readyz and /metrics on ADMIN_ADDR.
func startAdmin(lc fx.Lifecycle, cfg config, db *bun.DB, client *asynq.Client, reg *prometheus.Registry, log *slog.Logger) {
	checks := map[string]func(context.Context) error{
		"postgres": func(ctx context.Context) error { return postgres.Health(ctx, db) },
		"redis":    pingQueue(client),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		failed := []string{}
		for name, check := range checks {
			if err := check(ctx); err != nil {
				failed = append(failed, name)
				log.Warn("readiness check failed", "dependency", name, "err", err)
			}
		}
		if len(failed) > 0 {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]any{
				"code": "NOT_READY", "message": "依赖不可用：" + joinNames(failed) + "；请检查其连接配置与运行状态", "retryable": true,
			}})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready"})
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))

	srv := &http.Server{Addr: cfg.AdminAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
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

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += "、"
		}
		out += n
	}
	return out
}
