package redis

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/fx"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/redisurl"
)

// ModuleConfig is what an app supplies (fx.Supply) for Module.
type ModuleConfig struct {
	// URL is REDIS_URL: one node, Sentinel or Cluster (see redisurl).
	URL string
	// Cache configures the config cache.
	Cache CacheConfig
	// Guard configures the short guard.
	Guard GuardConfig
	// CounterPrefix starts the WindowCounter's keys. Default:
	// DefaultCounterPrefix.
	CounterPrefix string
}

// Module provides a rueidis.Client (closed on stop, traced: see Traced), ports.ConfigCache,
// ports.Guard, ports.WindowCounter and its readiness Probe. Redis is a
// cache and a guard here, so the app starts and serves from Postgres while
// Redis is down: a single node's client is kept (and redials) when the
// first dial fails. A Sentinel or Cluster topology must answer at start.
var Module = fx.Module("redis",
	fx.Provide(
		newFxClient,
		fx.Annotate(newFxCache, fx.As(new(ports.ConfigCache))),
		fx.Annotate(newFxGuard, fx.As(new(ports.Guard))),
		fx.Annotate(newFxCounter, fx.As(new(ports.WindowCounter))),
		newFxProbe,
	),
)

func newFxClient(lc fx.Lifecycle, cfg ModuleConfig, log *slog.Logger) (rueidis.Client, error) {
	topo, err := redisurl.Parse(cfg.URL)
	if err != nil {
		return nil, err
	}
	opt := ClientOption(topo)
	opt.Dialer.Timeout = time.Second
	client, err := rueidis.NewClient(opt)
	if client == nil {
		return nil, fmt.Errorf("create the redis %s client: %w; the %s topology must answer at start", topo.Mode, err, topo.Mode)
	}
	if err != nil {
		log.Warn("redis unavailable at start; system config is read from Postgres until it answers",
			"component", "system-config", "error", err)
	}
	lc.Append(fx.StopHook(client.Close))
	return Traced(client), nil
}

func newFxCache(client rueidis.Client, cfg ModuleConfig) (*ConfigCache, error) {
	return NewConfigCache(client, cfg.Cache)
}

func newFxGuard(client rueidis.Client, cfg ModuleConfig) (*Guard, error) {
	return NewGuard(client, cfg.Guard)
}

func newFxCounter(client rueidis.Client, cfg ModuleConfig) (*WindowCounter, error) {
	return NewWindowCounter(client, cfg.CounterPrefix)
}

// Probe is Module's readiness probe of Redis, named "redis"; an app lists
// it among the ports.Probe its readiness endpoint checks.
type Probe struct{ ports.Probe }

func newFxProbe(client rueidis.Client) Probe {
	return Probe{ports.Probe{Name: "redis", Check: func(ctx context.Context) error {
		return client.Do(ctx, client.B().Ping().Build()).Error()
	}}}
}
