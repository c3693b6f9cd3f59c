package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/july/template/adapters/postgres/pgconfig"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/relay"
	"github.com/july/template/core/sysconfig"
)

// Item 10 (relay): a change of a registered key applies to the running
// relay within the refresh bound, without a restart; a key pinned by the
// environment keeps its pinned value.
func TestRelayTuningAppliesAtRuntime(t *testing.T) {
	t.Parallel()
	_, cfg := tuningConfig(t)
	cfg.TuningRefresh = 100 * time.Millisecond
	var rl *relay.Relay
	var svc *configsvc.Service
	app := fx.New(options(cfg, slog.New(slog.DiscardHandler)), fx.Populate(&rl, &svc))
	require.NoError(t, app.Err())
	require.NoError(t, app.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, app.Stop(ctx))
	})
	require.Equal(t, relay.DefaultBatchSize, rl.Tuning().BatchSize)

	update := func(key string, v int) {
		t.Helper()
		raw, _ := json.Marshal(v)
		_, err := svc.Update(t.Context(), sysconfig.UpdateRequest{Key: key, Raw: raw, Actor: "admin-1"}, configsvc.Meta{RequestID: "tuning-test-1"})
		require.NoError(t, err)
	}
	update(configsvc.KeyRelayBatchSize, 7)
	update(configsvc.KeyRelayLeaseTTL, 60)
	require.Eventually(t, func() bool { return rl.Tuning().BatchSize == 7 }, 5*time.Second, 50*time.Millisecond,
		"the running relay picks up the new batch size")
	require.Equal(t, 20*time.Second, rl.Tuning().LeaseFor, "a pinned key keeps the environment's value")
}

// Item 10 (relay side): the relay announces the keys its environment pins,
// for the config API's pinned_by, and withdraws them when it stops.
func TestRelayAnnouncesEnvironmentPins(t *testing.T) {
	t.Parallel()
	db, cfg := tuningConfig(t)
	cfg.Owner = "relay-pins-1"
	app := fx.New(options(cfg, slog.New(slog.DiscardHandler)))
	require.NoError(t, app.Err())
	require.NoError(t, app.Start(t.Context()))
	pins, err := pgconfig.NewPins(db.Bun)
	require.NoError(t, err)
	active := func() map[string][]sysconfig.Pin {
		m, err := pins.Active(t.Context(), time.Now().Add(-time.Minute))
		require.NoError(t, err)
		return m
	}
	require.Eventually(t, func() bool { return len(active()) > 0 }, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, map[string][]sysconfig.Pin{
		configsvc.KeyRelayLeaseTTL: {{Key: configsvc.KeyRelayLeaseTTL, Source: "env RELAY_LEASE_TTL", Owner: "relay-pins-1"}},
	}, active(), "only the pinned key, by its variable and the relay's owner id")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, app.Stop(ctx))
	require.Empty(t, active(), "rule: a stopped relay withdraws its pins")
}

// tuningConfig is an in-process relay's config on a fresh database and
// Redis prefix, without a worker, with RELAY_LEASE_TTL pinned to 20s.
func tuningConfig(t *testing.T) (*testinfra.DB, config) {
	t.Helper()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: migrateDomains})
	r := testinfra.NewRedis(t)
	cfg := testConfig()
	cfg.DatabaseURL, cfg.RedisURL = db.URL, r.URL
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.Queue = r.Prefix + "q"
	cfg.WorkerEnabled = false
	cfg.DrainDelay = 0
	cfg.LeaseTTL = 20 * time.Second // pinned, as RELAY_LEASE_TTL would
	return db, cfg
}
