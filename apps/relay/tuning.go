package main

import (
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
	"github.com/july/template/core/sysconfig"
)

// TuningRefresh is how often the relay re-reads its registered keys
// (relay.delivery.batch_size, lease_ttl_seconds, max_attempts), so a super
// admin's change applies without a restart within this bound. A key pinned
// by the environment (RELAY_BATCH_SIZE, RELAY_LEASE_TTL,
// RELAY_MAX_ATTEMPTS) is not re-read.
const TuningRefresh = configsvc.DefaultRelayTuneEvery

// tuningOption runs a configsvc.RelayTuner: it re-applies the relay's
// registered keys every refresh and announces the keys its environment
// pins (envPins).
func tuningOption(refresh time.Duration) fx.Option {
	return fx.Invoke(func(lc fx.Lifecycle, cfg config, svc *configsvc.Service, r *relay.Relay, pins ports.ConfigPins, clock ports.Clock, log *slog.Logger) error {
		t, err := configsvc.NewRelayTuner(svc, r, pins, clock, configsvc.RelayTunerConfig{
			Owner:  cfg.Owner,
			Pinned: relay.Tuning{BatchSize: cfg.BatchSize, LeaseFor: cfg.LeaseTTL, MaxAttempts: cfg.MaxAttempts},
			Pins:   envPins(cfg),
			Every:  refresh,
			Logger: log,
		})
		if err != nil {
			return err
		}
		lc.Append(fx.Hook{OnStart: t.Start, OnStop: t.Stop})
		return nil
	})
}

// envPins lists the registered keys cfg's environment pins.
func envPins(cfg config) []sysconfig.Pin {
	var pins []sysconfig.Pin
	add := func(set bool, key, env string) {
		if set {
			pins = append(pins, sysconfig.Pin{Key: key, Source: "env " + env, Owner: cfg.Owner})
		}
	}
	add(cfg.BatchSize != 0, configsvc.KeyRelayBatchSize, "RELAY_BATCH_SIZE")
	add(cfg.LeaseTTL != 0, configsvc.KeyRelayLeaseTTL, "RELAY_LEASE_TTL")
	add(cfg.MaxAttempts != 0, configsvc.KeyRelayMaxAttempts, "RELAY_MAX_ATTEMPTS")
	return pins
}
