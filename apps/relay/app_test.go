package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/fx/fxtest"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/core/ports"
)

// REGRESSION: newRelayMetrics and startRetention both register
// outbox_retention_removed_total; with OUTBOX_RETENTION set the relay
// panicked at startup.
func TestRetentionMetricRegisteredOnce(t *testing.T) {
	t.Parallel()

	reg := prometheus.NewRegistry()
	newRelayMetrics(reg)
	store, err := postgres.NewOutboxStore(&bun.DB{}, postgres.OutboxConfig{})
	require.NoError(t, err)
	cfg := testConfig()
	cfg.Retention = 24 * time.Hour
	require.NotPanics(t, func() {
		err = startRetention(fxtest.NewLifecycle(t), cfg, store, ports.ClockFunc(time.Now), reg, slog.Default())
	})
	require.NoError(t, err)
}
