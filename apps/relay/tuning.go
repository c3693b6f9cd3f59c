package main

import (
	"context"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/relay"
	"github.com/july/template/core/startstop"
)

// TuningRefresh is how often the relay re-reads its registered keys
// (relay.delivery.batch_size, lease_ttl_seconds, max_attempts), so a super
// admin's change applies without a restart within this bound, well inside
// the config cache's 5-minute TTL. A key pinned by the environment
// (RELAY_BATCH_SIZE, RELAY_LEASE_TTL, RELAY_MAX_ATTEMPTS) is not re-read.
const TuningRefresh = 30 * time.Second

// tuningOption re-applies the relay's registered keys every refresh.
func tuningOption(refresh time.Duration) fx.Option {
	return fx.Invoke(func(lc fx.Lifecycle, cfg config, svc *configsvc.Service, r *relay.Relay, log *slog.Logger) {
		var loop startstop.Service
		lc.Append(fx.Hook{
			OnStart: func(context.Context) error {
				loop.Start(func(ctx context.Context) {
					t := time.NewTicker(refresh)
					defer t.Stop()
					for {
						select {
						case <-ctx.Done():
							return
						case <-t.C:
							retune(ctx, cfg, svc, r, log)
						}
					}
				})
				return nil
			},
			OnStop: loop.Stop,
		})
	})
}

// retune reads the unpinned keys and applies any change.
func retune(ctx context.Context, cfg config, svc *configsvc.Service, r *relay.Relay, log *slog.Logger) {
	next := tuning(config{BatchSize: cfg.BatchSize, LeaseTTL: cfg.LeaseTTL, MaxAttempts: cfg.MaxAttempts}, svc, slog.New(slog.DiscardHandler))
	want := relay.Tuning{BatchSize: next.BatchSize, LeaseFor: next.LeaseTTL, MaxAttempts: next.MaxAttempts}
	if cur := r.Tuning(); cur != want && ctx.Err() == nil {
		r.Retune(want)
		log.Info("relay tuning changed", "batch_size", want.BatchSize, "lease_ttl", want.LeaseFor.String(), "max_attempts", want.MaxAttempts)
	}
}
