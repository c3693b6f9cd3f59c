package main

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/metrics"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/redis"
	"github.com/july/template/adapters/tracing"
	"github.com/july/template/apps/internal/domains"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
	"github.com/july/template/internal/appkit"
)

func serve(ctx context.Context, cfg config, stdout io.Writer) error {
	log := appkit.NewLogger(stdout, cfg.LogLevel, httpx.LogIDs)
	return appkit.Serve(ctx, options(cfg, log), cfg.DrainDelay+cfg.ShutdownTimeout+5*time.Second,
		func() { log.Info("api started", "http_addr", cfg.HTTPAddr, "admin_addr", cfg.AdminAddr) },
		func() {
			log.Info("api stopping: readiness fails for the drain delay, then in-flight requests finish",
				"drain_delay", cfg.DrainDelay.String(), "timeout", cfg.ShutdownTimeout.String())
		})
}

// options is the whole API graph; main and the tests build it the same way.
func options(cfg config, log *slog.Logger) fx.Option {
	return fx.Options(
		appkit.FxLogger(cfg.LogLevel, log),
		fx.Supply(cfg, log),
		fx.Supply(cfg.Tracing),
		tracing.Module,
		fx.Supply(postgres.Config{URL: cfg.DatabaseURL, DirectURL: cfg.DirectURL, MaxOpenConns: cfg.DBMaxOpenConns}),
		postgres.Module,
		fx.Supply(redis.ModuleConfig{URL: cfg.RedisURL, Cache: redis.CacheConfig{Prefix: cfg.CachePrefix}, CounterPrefix: cfg.CounterPrefix}),
		redis.Module,
		metrics.Module,
		fx.Supply(metrics.Component("api"), buildInfo()),
		metrics.ProbeModule,
		postgres.MetricsModule,
		fx.Provide(
			func() ports.Clock { return ports.SystemClock },
			newSysRegistry,
			newConfigService,
		),
		httpOptions,
	)
}

// newSysRegistry is the service's one registry (apps/internal/domains):
// the template's keys and every domain's, the same keys migrate seeds.
func newSysRegistry() (*sysconfig.Registry, error) { return domains.Registry() }

// newConfigService wires alerts to an ERROR line with the request id and
// to config_alerts_total{code}, which operators alert on.
// Pins are the keys relays take from their environment (pinned_by).
func newConfigService(reg *sysconfig.Registry, store ports.ConfigStore, cache ports.ConfigCache, pins ports.ConfigPins, clock ports.Clock, metricsReg prometheus.Registerer, log *slog.Logger) (*configsvc.Service, error) {
	alert, err := metrics.NewConfigAlerts(metricsReg)
	if err != nil {
		return nil, err
	}
	return configsvc.New(reg, store, cache, clock, configsvc.Options{
		Logger: log,
		Pins:   pins,
		AlertFunc: func(ctx context.Context, a sysconfig.Alert) {
			alert(a.Code)
			httpx.Logger(ctx, log).ErrorContext(ctx, a.Message,
				"alert_code", a.Code, "config_key", a.Key, "component", "system-config")
		},
	})
}

// buildInfo is the link-time stamp (appkit.BuildInfo) for service_build_info.
func buildInfo() metrics.BuildInfo {
	b := appkit.BuildInfo()
	return metrics.BuildInfo{Version: b.Version, Commit: b.Commit, TemplateVersion: b.TemplateVersion, GoVersion: b.GoVersion}
}
