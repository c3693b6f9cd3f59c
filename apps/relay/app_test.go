package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx/fxtest"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/adapters/metrics"
	"github.com/july/template/core/ports"
)

// REGRESSION: the relay metrics and the retention job both registered
// outbox_retention_removed_total; with OUTBOX_RETENTION set the relay
// panicked at startup.
func TestRetentionMetricRegisteredOnce(t *testing.T) {
	t.Parallel()

	reg := prometheus.NewRegistry()
	metrics.NewRelayMetrics(reg)
	removed, err := metrics.NewRetentionRemoved(reg)
	require.NoError(t, err)
	cfg := testConfig()
	cfg.Retention = 24 * time.Hour
	require.NotPanics(t, func() {
		err = startRetention(fxtest.NewLifecycle(t), cfg, relayStore{Store: memory.NewOutboxStore()}, ports.SystemClock, removed, slog.Default())
	})
	require.NoError(t, err)
}
