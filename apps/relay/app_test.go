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
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
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

// The loops share one payload budget: at RELAY_LOOPS 64 with payloads at
// the cap, per-claim budgets alone let the relay take 2.5 GiB of RSS.
func TestClaimBytesShareTheBudget(t *testing.T) {
	for loops := relay.MinLoops; loops <= relay.MaxLoops; loops++ {
		c := claimBytes(loops)
		if c < outbox.MaxPayloadBytes {
			t.Fatalf("%d loops: a claim of %d bytes cannot hold one payload at the cap", loops, c)
		}
		if total := c * int64(loops); total > max(InFlightBytes, int64(loops)*outbox.MaxPayloadBytes) {
			t.Fatalf("%d loops hold up to %d bytes, over the budget %d", loops, total, InFlightBytes)
		}
	}
}
