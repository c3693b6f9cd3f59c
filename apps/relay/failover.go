package main

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/july/template/adapters/redis"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redisurl"
	"github.com/july/template/core/relay"
)

// redeliverOption, with a Sentinel REDIS_URL, runs a relay.FailoverRedeliver:
// on each master switch it publishes again what was delivered in the window
// before it, since Redis replicates asynchronously and the old master may
// have dropped tasks it acknowledged (docs/scaling.md). A cluster's
// CLUSTER FAILOVER is coordinated and a single node has no failover, so
// they need nothing. The switch is also a loss signal for the reconciler,
// when it runs.
var redeliverOption = fx.Invoke(startRedeliver)

type redeliverParams struct {
	fx.In
	Lifecycle fx.Lifecycle
	Config    config
	Clock     ports.Clock
	Log       *slog.Logger
	Pub       ports.Publisher
	Store     ports.OutboxStore `name:"relay_outbox"` // postgres.RelayOutboxName
	Reconcile *relay.Reconciler `optional:"true"`
}

func startRedeliver(p redeliverParams) error {
	topo, err := redisurl.Parse(p.Config.RedisURL)
	reader, ok := p.Store.(ports.OutboxDeliveredReader)
	if err != nil || topo.Mode != redisurl.Sentinel || !ok {
		return nil
	}
	log := p.Log.With("component", "outbox-redeliver")
	watcher, err := redis.NewMasterSwitchWatcher(topo, log)
	if err != nil {
		return err
	}
	cfg := relay.FailoverRedeliverConfig{Window: p.Config.RedeliverWindow, Logger: log}
	if p.Reconcile != nil {
		cfg.SignalFunc = p.Reconcile.Signal
	}
	f, err := relay.NewFailoverRedeliver(reader, p.Pub, watcher, p.Clock, cfg)
	if err != nil {
		return err
	}
	p.Lifecycle.Append(fx.Hook{OnStart: f.Start, OnStop: f.Stop})
	return nil
}
