package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.uber.org/fx"

	"github.com/july/template/adapters/redis"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redisurl"
	"github.com/july/template/core/relay"
)

// redeliverOption, with a Sentinel REDIS_URL, watches for master switches
// and publishes again what was delivered in the window before each one:
// Redis replicates asynchronously, so the old master may have dropped
// tasks it acknowledged (docs/scaling.md). A cluster's CLUSTER FAILOVER is
// coordinated and a single node has no failover, so they need nothing.
// The switch is also a loss signal for the reconciler, when it runs.
var redeliverOption = fx.Invoke(startRedeliver)

type redeliverParams struct {
	fx.In
	Lifecycle fx.Lifecycle
	Config    config
	Log       *slog.Logger
	Pub       ports.Publisher
	Store     ports.OutboxStore `name:"relay_outbox"` // postgres.RelayOutboxName
	Reconcile *relay.Reconciler `optional:"true"`
}

func startRedeliver(p redeliverParams) {
	lc, cfg, log, pub, store := p.Lifecycle, p.Config, p.Log, p.Pub, p.Store
	topo, err := redisurl.Parse(cfg.RedisURL)
	reader, ok := store.(ports.OutboxDeliveredReader)
	if err != nil || topo.Mode != redisurl.Sentinel || !ok {
		return
	}
	log = log.With("component", "outbox-redeliver")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex // one redelivery at a time; a second switch waits for the first
	onSwitch := func(newMaster string) {
		if p.Reconcile != nil {
			p.Reconcile.Signal(ports.LossSignal{Kind: "master_switch", Detail: "sentinel announced a new master"})
		}
		from := time.Now().Add(-cfg.RedeliverWindow)
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			start := time.Now()
			n, err := relay.Redeliver(ctx, reader, pub, from)
			if err != nil {
				log.Error("redis master switched; publishing the window's deliveries again failed part-way: replay the rest with relay outbox replay",
					"new_master", newMaster, "since", from, "published", n, "err", err)
				return
			}
			log.Warn("redis master switched; published the window's deliveries again (the queue absorbs those it still holds)",
				"new_master", newMaster, "since", from, "published", n, "took_ms", time.Since(start).Milliseconds())
		}()
	}
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			wg.Add(1)
			go func() { defer wg.Done(); redis.WatchMasterSwitch(ctx, topo, log, onSwitch) }()
			return nil
		},
		OnStop: func(context.Context) error { cancel(); wg.Wait(); return nil },
	})
}
