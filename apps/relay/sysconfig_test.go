package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgconfig"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

// TestTuningComesFromSystemConfigUnlessPinned: the relay reads its
// registered keys at start; an environment variable pins a value.
func TestTuningComesFromSystemConfigUnlessPinned(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	store, err := pgconfig.NewStore(db.Bun, pgoutbox.NewEventAuditWriter(pgoutbox.AuditConfig{}))
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	svc, err := newConfigService(store, ports.SystemClock, log)
	require.NoError(t, err)
	reg := sysconfig.NewRegistry()
	require.NoError(t, configsvc.RegisterTemplateKeys(reg))
	spec, _ := reg.Lookup(configsvc.KeyRelayBatchSize)
	_, err = store.Apply(t.Context(), sysconfig.Plan{Spec: spec, NewText: "123", NewVersion: 1},
		ports.AuditRecord{Action: "config.update", ResourceType: "system_config", ResourceID: spec.Key, Outcome: "accepted"}, time.Now())
	require.NoError(t, err)

	got := tuning(config{}, svc, log)
	require.Equal(t, 123, got.BatchSize, "the stored key applies")
	require.Equal(t, 30*time.Second, got.LeaseTTL, "a key without a row takes its registered default")
	require.Equal(t, 10, got.MaxAttempts)

	got = tuning(config{BatchSize: 7}, svc, log)
	require.Equal(t, 7, got.BatchSize, "RELAY_BATCH_SIZE pins the value")
}
