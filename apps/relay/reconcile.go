package main

import (
	"context"
	"errors"
	"log/slog"

	"go.uber.org/fx"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/metrics"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
)

// evidenceOption gives the worker the relay store as its
// ports.ConsumptionRecorder: every event a consumer finishes is recorded
// (queue.EvidenceMiddleware), which the reconciler and retention read.
var evidenceOption = fx.Provide(func(s relayStore) ports.ConsumptionRecorder { return s.Store })

// reconcileOption runs the outbox reconciler (relay.Reconciler) with a
// queue.LossWatcher that triggers it, unless RELAY_RECONCILE=false.
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
	obs relay.ReconcileObserver, log *slog.Logger, s relayStore) (*relay.Reconciler, error) {
	store := s.Store
	return relay.NewReconciler(relay.ReconcileStores{Outbox: store, Failures: store, Recorder: store, Queue: inv, Pub: pub},
		clock, relay.ReconcileConfig{Every: cfg.ReconcileEvery, Grace: cfg.ReconcileGrace, Horizon: cfg.ReconcileHorizon}, obs, log)
}

func startReconciler(lc fx.Lifecycle, cfg config, watchers queue.LossWatchers, r *relay.Reconciler, log *slog.Logger) error {
	w, err := watchers.New(cfg.LossCheckEvery, log, r.Signal)
	if err != nil {
		return err
	}
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error { return errors.Join(w.Start(ctx), r.Start(ctx)) },
		OnStop:  func(ctx context.Context) error { return errors.Join(w.Stop(ctx), r.Stop(ctx)) }, // the watcher first: it signals r
	})
	return nil
}
