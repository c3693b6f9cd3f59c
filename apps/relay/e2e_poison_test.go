package main_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/contracttests/testinfra"
)

// POISON EVENT: an event whose handling kills the relay
// process while it holds the lease (here: its Redis hangs, so the relay is
// still publishing, and the test SIGKILLs it, as an OOM kill would). Every
// lease that expires that way counts as a delivery attempt, so after
// RELAY_MAX_ATTEMPTS dead holders the next relay's recovery sweep fails the
// event for good (status 4, LEASE_EXPIRED) instead of handing it to the
// next victim forever; the failure reaches the failed-rows gauge and the
// final-failure counter behind the OutboxFinalFailures page, and the relay
// that failed it keeps delivering everything else.
func TestE2ERelayKilledByItsEventEndsFailed(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	w := newWorld(t, "")
	hang := blackHole(t)
	const maxAttempts = 3
	tuning := []string{"RELAY_LOOPS=1", "RELAY_BATCH_SIZE=1", "RELAY_LEASE_TTL=1s", fmt.Sprintf("RELAY_MAX_ATTEMPTS=%d", maxAttempts)}
	poison := w.commit("req-poison", "corr-poison", orderCreated{OrderID: "poison", Amount: 1})[0]
	const heldBy = "SELECT count(*) FROM tb_outbox_event WHERE event_id = ? AND status = 2 AND lease_owner = ?"
	for i := 1; i <= maxAttempts; i++ {
		name := fmt.Sprintf("relay-victim-%d", i)
		p := w.spawnRelay(name, hang, tuning...)
		p.waitHealthy()
		// The first victim claims the new event; each later one first
		// recovers its predecessor's expired lease (the attempt counted,
		// retry_count i-1), then claims the row once its backoff is over.
		w.waitCount(1, heldBy, poison, name+"/0")
		require.Equal(t, i-1, w.count("SELECT retry_count FROM tb_outbox_event WHERE event_id = ?", poison),
			"each dead holder so far counted one attempt")
		p.kill()
	}

	// A healthy relay recovers the last dead holder's lease: that was the
	// last attempt, so the event fails for good instead of being published.
	w.startConsumer()
	last := w.startRelay("relay-survivor", tuning...)
	w.waitCount(1, `SELECT count(*) FROM tb_outbox_event WHERE event_id = ? AND status = 4
		AND retry_count = ? AND last_error_code = 'LEASE_EXPIRED' AND last_error_message <> ''
		AND lease_owner IS NULL AND lease_expires_at IS NULL AND delivered_at IS NULL`, poison, maxAttempts)
	const finalLeaseExpired = `outbox_delivery_failures_total{error_code="LEASE_EXPIRED",outcome="final"}`
	eventually(t, "the failure is counted for the OutboxFinalFailures page and in the failed-rows gauge", func() (bool, string) {
		final, _ := last.sample(finalLeaseExpired)
		failed, _ := last.sample("outbox_failed_events")
		return final == 1 && failed == 1, fmt.Sprintf("%s=%v outbox_failed_events=%v", finalLeaseExpired, final, failed)
	})
	require.Equal(t, float64(1), last.metric("outbox_leases_recovered_total"), "the survivor took back one expired lease")
	var logged bool
	for _, line := range last.errorLines() {
		logged = logged || (strings.Contains(line, poison) && strings.Contains(line, "LEASE_EXPIRED"))
	}
	require.True(t, logged, "the survivor logs the failed event's id and code at ERROR:\n%s", last.logs.String())

	// The fleet keeps working: the survivor delivers the next event.
	next := w.commit("req-after-poison", "corr-after-poison", orderCreated{OrderID: "after-poison", Amount: 2})[0]
	w.waitCount(1, "SELECT count(*) FROM consumed WHERE event_id = ?::uuid", next)
	require.Zero(t, w.count("SELECT count(*) FROM consumed WHERE event_id = ?::uuid", poison), "the failed event was never enqueued")
}
