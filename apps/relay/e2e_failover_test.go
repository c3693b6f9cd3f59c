package main_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/internal/pgtopo"
)

// POSTGRES FAILOVER: two relays drain through a multi-host DATABASE_URL
// (target_session_attrs=read-write) while the primary crashes (pg_ctl
// stop -m immediate) and the standby is promoted. The relays and the
// consumer reconnect to the new primary by themselves, every event is
// delivered and consumed once, and no lease is left behind: rows claimed
// on the old primary are either completed by their (still fenced) holder
// or recovered when the lease expires, never completed with a stale token.
func TestE2EPostgresFailover(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	pair := pgtopo.Start(t)
	w := privateWorld(t, pair.URL, "failover")
	bdb := w.db.Bun

	const n = 3000
	ids := w.commitMany("fo", n, 100)
	pair.CaughtUp(t) // the events themselves survive the switch; only the delivery state is in flight
	w.startConsumer()
	relays := []*relayProc{
		w.startRelay("relay-a", "RELAY_LOOPS=1", "RELAY_BATCH_SIZE=5", "RELAY_LEASE_TTL=2s"),
		w.startRelay("relay-b", "RELAY_LOOPS=1", "RELAY_BATCH_SIZE=5", "RELAY_LEASE_TTL=2s"),
	}

	// count tolerates the switch: a query on a connection to the dead
	// primary fails, and the pool dials the new one next time.
	count := func(q string) (int, bool) {
		var c int
		if err := bdb.NewRaw(q).Scan(t.Context(), &c); err != nil {
			return 0, false
		}
		return c, true
	}
	eventually(t, "a tenth delivered before the switch", func() (bool, string) {
		c, _ := count(deliveredEvents)
		return c >= n/10, fmt.Sprintf("%d delivered", c)
	})
	crash := time.Now()
	pair.Failover(t)
	promoted := time.Since(crash)
	var atSwitch int
	eventually(t, "the new primary answers", func() (bool, string) {
		c, ok := count(deliveredEvents)
		atSwitch = c
		return ok, "no answer"
	})
	var resumed time.Duration
	eventually(t, "deliveries resume on the new primary", func() (bool, string) {
		c, _ := count(deliveredEvents)
		if c > atSwitch {
			resumed = time.Since(crash)
			return true, ""
		}
		return false, fmt.Sprintf("%d delivered", c)
	})
	for _, q := range []string{deliveredEvents, consumedAll} {
		eventually(t, q, func() (bool, string) {
			c, _ := count(q)
			return c == n, fmt.Sprintf("got %d, want %d", c, n)
		})
	}
	left, ok := count("SELECT count(*) FROM tb_outbox_event WHERE status <> 3 OR lease_owner IS NOT NULL OR lease_token < 1")
	require.True(t, ok)
	require.Zero(t, left, "every row delivered and released")
	perEvent, total := w.cons.delivered()
	for _, id := range ids {
		require.GreaterOrEqual(t, perEvent[id], 1, "event %s delivered", id)
	}
	var lost float64
	for _, p := range relays {
		require.False(t, p.exited(), "relay %s kept running through the switch", p.name)
		lost += p.metric("outbox_leases_lost_total")
	}
	t.Logf("postgres failover: promoted %s after the crash, deliveries resumed %s after it; %d raw deliveries for %d events; %v leases lost (refused as stale)",
		promoted.Round(time.Millisecond), resumed.Round(time.Millisecond), total, n, lost)
}
