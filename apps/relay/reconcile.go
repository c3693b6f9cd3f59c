package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.uber.org/fx"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/metrics"
	"github.com/july/template/adapters/redis"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redisurl"
	"github.com/july/template/core/relay"
	"github.com/july/template/core/startstop"
)

// evidenceOption gives the worker the relay store as its
// ports.ConsumptionRecorder: every event a consumer finishes is recorded
// (queue.EvidenceMiddleware), which the reconciler and retention read.
var evidenceOption = fx.Provide(func(s relayStore) ports.ConsumptionRecorder { return s.Store })

// historyOption checks, before the worker and the relays start, that the
// queue's tasks belong to the database's history (relay.History: after a
// restore the queue forgets them), and gives the reconciler the same check
// for every pass. It goes with the reconciler, which publishes again what
// the queue forgot.
func historyOption(cfg config) fx.Option {
	if !cfg.Reconcile {
		return fx.Options()
	}
	return fx.Options(
		fx.Provide(func(s relayStore, q ports.QueueHistory, log *slog.Logger) (*relay.History, error) {
			db, ok := s.Store.(ports.DBHistory)
			if !ok {
				return nil, fmt.Errorf("relay: the outbox store %T cannot tell the database's position (ports.DBHistory); set RELAY_RECONCILE=false to run without the reconciler", s.Store)
			}
			return relay.NewHistory(db, q, log)
		}),
		fx.Invoke(func(lc fx.Lifecycle, r *relay.Reconciler, log *slog.Logger) {
			lc.Append(fx.StartHook(func(ctx context.Context) {
				if err := r.CheckHistory(ctx); err != nil {
					log.Warn("could not check the queue against the database's history at start; the reconciler's passes retry", "error", err)
				}
			}))
		}),
	)
}

// reconcileOption runs the outbox reconciler (relay.Reconciler) with a
// queue.LossWatcher that triggers it, and with a Sentinel REDIS_URL a
// watcher of master switches, unless RELAY_RECONCILE=false.
func reconcileOption(cfg config) fx.Option {
	if !cfg.Reconcile {
		return fx.Options()
	}
	return fx.Options(
		fx.Provide(
			fx.Annotate(metrics.NewReconcileMetrics, fx.As(new(relay.ReconcileObserver))),
			newReconciler,
		),
		fx.Invoke(startReconciler),
	)
}

func newReconciler(cfg config, inv ports.QueueInventory, pub ports.Publisher, clock ports.Clock,
	obs relay.ReconcileObserver, log *slog.Logger, s relayStore, h *relay.History) (*relay.Reconciler, error) {
	store := s.Store
	return relay.NewReconciler(relay.ReconcileStores{Outbox: store, Failures: store, Recorder: store, Queue: inv, Pub: pub, History: h},
		clock, relay.ReconcileConfig{Every: cfg.ReconcileEvery, Grace: cfg.ReconcileGrace, Horizon: cfg.ReconcileHorizon}, obs, log)
}

func startReconciler(lc fx.Lifecycle, cfg config, watchers queue.LossWatchers, r *relay.Reconciler, log *slog.Logger) error {
	w, err := watchers.New(cfg.LossCheckEvery, log, r.Signal)
	if err != nil {
		return err
	}
	sw, err := switchWatch(cfg, log, r.Signal)
	if err != nil {
		return err
	}
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			sw.Start(ctx)
			return errors.Join(w.Start(ctx), r.Start(ctx))
		},
		// The watchers first: they signal r.
		OnStop: func(ctx context.Context) error { return errors.Join(sw.Stop(ctx), w.Stop(ctx), r.Stop(ctx)) },
	})
	return nil
}

// switchWatcher turns each master switch Sentinel announces into a loss
// signal at once (the run_id check sees it too, one LossCheckEvery later):
// Redis replicates asynchronously, so the old master may have dropped
// tasks it had acknowledged, and the reconciler publishes again exactly
// those that are unconsumed and missing from the queue. A single node or
// a cluster (whose failover the run_id check sees) watches nothing.
type switchWatcher struct {
	watch func(ctx context.Context)
	svc   startstop.Service
}

func switchWatch(cfg config, log *slog.Logger, signal func(ports.LossSignal)) (*switchWatcher, error) {
	sw := &switchWatcher{}
	topo, err := redisurl.Parse(cfg.RedisURL)
	if err != nil || topo.Mode != redisurl.Sentinel {
		return sw, nil //nolint:nilerr // config already refused a bad URL
	}
	w, err := redis.NewMasterSwitchWatcher(topo, log)
	if err != nil {
		return nil, err
	}
	sw.watch = func(ctx context.Context) {
		w.WatchMasterSwitch(ctx, func(string) {
			signal(ports.LossSignal{Kind: relay.LossMasterSwitch, Detail: "sentinel announced a new master"})
		})
	}
	return sw, nil
}

func (s *switchWatcher) Start(context.Context) {
	if s.watch != nil {
		s.svc.Start(s.watch)
	}
}

func (s *switchWatcher) Stop(ctx context.Context) error { return s.svc.Stop(ctx) }
