package main_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/periodic"
)

// PERIODIC COMMANDS through the real relay binary: three relays run the
// e2efault build's "e2e.tick" command (periodic_e2e.go, every second,
// catch-up Each) and one of them is killed (SIGKILL) just before an
// occurrence. Every occurrence from the first to the last is committed
// exactly once, as one event whose event_id and request_id are
// periodic.ID("e2e.tick", scheduled time), with no gap (the kill
// included), and each is consumed once. Which relay commits an
// occurrence is up to the row lock; the kill may or may not land inside
// its transaction (then Postgres rolls it back and another relay commits
// the occurrence on its next pass).
func TestE2EPeriodicCommandUnderThreeRelaysAndAKill(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	bin := faultRelay(t)
	w := newWorld(t, "")
	env := append([]string{"E2E_PERIODIC_EVERY=1s", "PERIODIC_INTERVAL=100ms", "WORKER_ENABLED=true"}, lossEnv...)
	var relays []*relayProc
	for _, name := range []string{"relay-a", "relay-b", "relay-c"} {
		p := w.spawnBin(bin, name, w.redisURL, env...)
		p.waitHealthy()
		relays = append(relays, p)
	}
	const ticks = `SELECT count(*) FROM tb_outbox_event WHERE event_type = 'e2e.tick'`
	atLeast := func(n int) {
		waitProgress(t, fmt.Sprintf("%d occurrences committed", n), stallLimit, false, func() (int, bool, string) {
			c := w.count(ticks)
			return c, c >= n, fmt.Sprintf("%d committed", c)
		})
	}
	atLeast(4)
	// Just before the next whole second: the occurrence is due while the
	// relay dies, and a relay of three may hold its row.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second - 20*time.Millisecond)))
	relays[1].kill()
	killedAt := time.Now()
	atLeast(w.count(ticks) + 5)

	var rows []struct {
		EventID   string    `bun:"event_id"`
		RequestID string    `bun:"request_id"`
		At        time.Time `bun:"at"`
	}
	require.NoError(t, w.db.Bun.NewRaw(`SELECT event_id::text, request_id, (payload->>'scheduled_at')::timestamptz AS at
		FROM tb_outbox_event WHERE event_type = 'e2e.tick' ORDER BY at`).Scan(t.Context(), &rows))
	for i, r := range rows {
		require.Equal(t, periodic.ID("e2e.tick", r.At), r.EventID, "occurrence %s: event_id is the stable id", r.At)
		require.Equal(t, r.EventID, r.RequestID, "occurrence %s: request_id carries the stable command id", r.At)
		if i > 0 {
			require.Equal(t, time.Second, r.At.Sub(rows[i-1].At), "occurrences %s and %s: a gap or a duplicate", rows[i-1].At, r.At)
		}
	}
	last := rows[len(rows)-1].At
	require.True(t, last.After(killedAt), "occurrences after the kill were committed by the two left")

	// Each committed occurrence is consumed, once (the consumer's record
	// is keyed by event_id; the worker's evidence rows use other names).
	const consumed = `SELECT count(*) FROM tb_outbox_consumption c JOIN tb_outbox_event e USING (event_id)
		WHERE e.event_type = 'e2e.tick' AND c.consumer = 'e2e-tick' AND (e.payload->>'scheduled_at')::timestamptz <= ?`
	w.waitCountProgress(len(rows), consumed, last)
	require.Zero(t, w.count(`SELECT count(*) FROM tb_outbox_event WHERE event_type = 'e2e.tick' AND status = 4`), "no occurrence failed")
	live := []*relayProc{relays[0], relays[2]}
	require.Positive(t, metricSum(t, live, "periodic_occurrences_committed_total", `command="e2e.tick"`), "the relays count what they commit")
	require.Zero(t, metricSum(t, live, "periodic_command_failures_total", `command="e2e.tick"`),
		"relays never collide: a row another relay holds is skipped, not waited for or failed on")
}
