//go:build pooler

package main_test

// Behind PgBouncer in transaction mode (make test-pooler: scripts/pgbouncer.sh
// starts one and sets TEST_PGBOUNCER_URL).

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/contracttests/testinfra"
)

// A RELAY WITH ONLY THE POOLED URL: its LISTEN goes through the pooler and
// hears nothing. It starts, says so once (a WARN naming
// DATABASE_DIRECT_URL), reports outbox_listen_working 0, and delivers by
// polling every 50 ms instead of RELAY_POLL_INTERVAL (set to 2 s here, so
// a delivery faster than that shows the fast polling).
func TestE2EPoolerRelayWithoutDirectURL(t *testing.T) {
	w := newWorld(t, "")
	w.startConsumer()
	pooled := testinfra.PoolerURL(t, w.db.URL)
	p := w.startRelay("relay-pooled", "DATABASE_URL="+pooled, "RELAY_POLL_INTERVAL=2s")

	eventually(t, "the relay reports its deaf LISTEN", func() (bool, string) {
		return strings.Contains(p.logs.String(), "DATABASE_DIRECT_URL"), "no line names DATABASE_DIRECT_URL yet"
	})
	require.Zero(t, p.metric("outbox_listen_working"), "rule: the gauge says the LISTEN does not work")

	const n = 200
	start := time.Now()
	w.commitMany("pooled", n, 10)
	w.waitCount(n, "SELECT count(*) FROM consumed")
	w.waitCount(n, "SELECT count(*) FROM tb_outbox_event WHERE event_type = ? AND status = 3", orderCreatedType)
	var p50 float64
	require.NoError(t, w.db.Bun.NewRaw(`SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM delivered_at - created_at))
		FROM tb_outbox_event WHERE event_type = ?`, orderCreatedType).Scan(t.Context(), &p50))
	require.Less(t, p50, 2.0, "rule: the relay polls faster than RELAY_POLL_INTERVAL while its LISTEN is deaf")

	var warns []string
	for line := range strings.SplitSeq(p.logs.String(), "\n") {
		if strings.Contains(line, "DATABASE_DIRECT_URL") {
			warns = append(warns, line)
		}
	}
	require.Len(t, warns, 1, "rule: one line names DATABASE_DIRECT_URL")
	require.Contains(t, warns[0], `"level":"WARN"`)
	require.Contains(t, warns[0], "50ms")
	require.Empty(t, p.errorLines())
	t.Logf("relay with only the pooled URL: %d events delivered and consumed in %s, commit-to-delivered p50 %.0f ms (polling every 50 ms); its warning: %s",
		n, time.Since(start).Round(time.Millisecond), p50*1000, warns[0])
}
