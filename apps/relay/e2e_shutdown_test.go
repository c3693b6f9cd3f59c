package main_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/contracttests/testinfra"
)

// Regression (issue 43 item 10): the relay has no Service, so nothing
// needs its /readyz to fail before it stops; it stopped only after
// SHUTDOWN_DRAIN_DELAY (5 s) when idle, and with its database gone each
// batch's finish retried its marks for a fresh stop timeout, batch after
// batch (19 s). Idle, it now stops at once; with the database gone within
// one stop budget (SHUTDOWN_TIMEOUT) counted from SIGTERM.
func TestRelayStopsPromptly(t *testing.T) {
	t.Parallel()
	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, "")
		r := w.startRelay("relay-stop-idle")
		start := time.Now()
		require.NoError(t, r.terminate(time.Minute), "SIGTERM exits 0")
		took := time.Since(start)
		t.Logf("idle relay stopped %s after SIGTERM", took.Round(time.Millisecond))
		require.Less(t, took, 5*time.Second, "rule: an idle relay does not wait SHUTDOWN_DRAIN_DELAY (default 5 s): it has no Service to drain")
	})
	t.Run("database gone", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, "")
		dbURL, proxy := testinfra.ProxyURL(t, w.db.URL)
		r := w.startRelay("relay-stop-nodb", "DATABASE_URL="+dbURL, "SHUTDOWN_TIMEOUT=2s", "RELAY_BATCH_SIZE=10")
		w.commitMany("stop", 400, 400)
		eventually(t, "the relay works on the backlog", func() (bool, string) {
			n := w.count("SELECT count(*) FROM tb_outbox_event WHERE status IN (2, 3)")
			return n > 20, fmt.Sprint(n)
		})
		proxy.Down()
		start := time.Now()
		err := r.terminate(2 * time.Minute)
		took := time.Since(start)
		t.Logf("relay without its database stopped %s after SIGTERM (%v)", took.Round(time.Millisecond), err)
		require.Less(t, took, 15*time.Second, "rule: finishing batches after SIGTERM shares one budget (SHUTDOWN_TIMEOUT 2 s), not one per batch")
	})
}
