package main

import (
	"context"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
	"github.com/july/template/core/startstop"
	"github.com/july/template/core/sysconfig"
)

// TuningRefresh is how often the relay re-reads its registered keys
// (relay.delivery.batch_size, lease_ttl_seconds, max_attempts), so a super
// admin's change applies without a restart within this bound, well inside
// the config cache's 5-minute TTL. A key pinned by the environment
// (RELAY_BATCH_SIZE, RELAY_LEASE_TTL, RELAY_MAX_ATTEMPTS) is not re-read.
const TuningRefresh = 30 * time.Second

// tuningOption re-applies the relay's registered keys every refresh and
// announces the keys its environment pins (ports.ConfigPins), so the
// config API shows them as pinned_by and refuses changes that would do
// nothing here. The pins are withdrawn on stop; a crashed relay's age out.
func tuningOption(refresh time.Duration) fx.Option {
	return fx.Invoke(func(lc fx.Lifecycle, cfg config, svc *configsvc.Service, r *relay.Relay, pins ports.ConfigPins, clock ports.Clock, log *slog.Logger) {
		var loop startstop.Service
		announce := func(ctx context.Context) {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := pins.Announce(ctx, cfg.Owner, envPins(cfg), clock.Now()); err != nil && ctx.Err() == nil {
				log.Warn("relay: announcing environment-pinned config keys failed; the config API may not show them until the next try", "error", err.Error())
			}
		}
		lc.Append(fx.Hook{
			OnStart: func(context.Context) error {
				loop.Start(func(ctx context.Context) {
					announce(ctx)
					t := time.NewTicker(refresh)
					defer t.Stop()
					for {
						select {
						case <-ctx.Done():
							return
						case <-t.C:
							announce(ctx)
							retune(ctx, cfg, svc, r, log)
						}
					}
				})
				return nil
			},
			OnStop: func(ctx context.Context) error {
				err := loop.Stop(ctx)
				if werr := pins.Withdraw(ctx, cfg.Owner); werr != nil {
					log.Warn("relay: withdrawing environment-pinned config keys failed; they age out within two minutes", "error", werr.Error())
				}
				return err
			},
		})
	})
}

// envPins lists the registered keys cfg's environment pins.
func envPins(cfg config) []sysconfig.Pin {
	var pins []sysconfig.Pin
	add := func(set bool, key, env string) {
		if set {
			pins = append(pins, sysconfig.Pin{Key: key, Source: "env " + env, Holder: cfg.Owner})
		}
	}
	add(cfg.BatchSize != 0, configsvc.KeyRelayBatchSize, "RELAY_BATCH_SIZE")
	add(cfg.LeaseTTL != 0, configsvc.KeyRelayLeaseTTL, "RELAY_LEASE_TTL")
	add(cfg.MaxAttempts != 0, configsvc.KeyRelayMaxAttempts, "RELAY_MAX_ATTEMPTS")
	return pins
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
