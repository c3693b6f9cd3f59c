package main_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/periodic"
)

// PERIODIC COMMANDS through the real relay binary: three relays run the
// e2efault build's "e2e.tick" command (periodic_e2e.go, every second,
// catch-up Each), and the relay committing an occurrence is killed
// (SIGKILL) inside its transaction: building the event of every fifth
// occurrence prints a marker and holds the command's row for
// E2E_PERIODIC_HOLD (3 s; the others wait, Each catches up after), and
// the test kills the relay that printed it. Postgres rolls its transaction back, another
// relay commits that occurrence on its next pass. Every occurrence from
// the first to the last is committed exactly once, as one event whose
// event_id and request_id are periodic.ID("e2e.tick", scheduled time),
// with no gap (the killed one included), and each is consumed once.
func TestE2EPeriodicCommandUnderThreeRelaysAndAKill(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	bin := faultRelay(t)
	w := newWorld(t, "")
	env := append([]string{"PERIODIC_ENABLED=true", "E2E_PERIODIC_EVERY=1s", "E2E_PERIODIC_HOLD=3s", "PERIODIC_INTERVAL=100ms", "WORKER_ENABLED=true"}, lossEnv...)
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
	// The next relay to print the marker holds the row of an occurrence
	// it has not committed: kill it there.
	const marker = "E2E_TICK_BUILDING "
	seen := make([]int, len(relays))
	for i, p := range relays {
		seen[i] = strings.Count(p.logs.String(), marker)
	}
	victim, victimAt := -1, ""
	waitProgress(t, "a relay building an occurrence", stallLimit, false, func() (int, bool, string) {
		for i, p := range relays {
			logs := p.logs.String()
			if strings.Count(logs, marker) > seen[i] {
				victim = i
				line := logs[strings.LastIndex(logs, marker)+len(marker):]
				victimAt = strings.TrimSpace(strings.SplitN(line, "\n", 2)[0])
				return 0, true, ""
			}
		}
		return 0, false, "no marker yet"
	})
	relays[victim].kill()
	killedAt := time.Now()
	at, err := time.Parse(time.RFC3339Nano, victimAt)
	require.NoError(t, err, "marker %q", victimAt)
	killedID := periodic.ID("e2e.tick", at)
	require.Zero(t, w.count(`SELECT count(*) FROM tb_outbox_event WHERE event_id = ?::uuid`, killedID),
		"relay %s was killed before it committed %s (inside its transaction)", relays[victim].name, at)
	atLeast(w.count(ticks) + 5)
	require.Equal(t, 1, w.count(`SELECT count(*) FROM tb_outbox_event WHERE event_id = ?::uuid`, killedID),
		"the occurrence whose relay was killed is committed by another, once")

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
	var live []*relayProc
	for i, p := range relays {
		if i != victim {
			live = append(live, p)
		}
	}
	require.Positive(t, metricSum(t, live, "periodic_occurrences_committed_total", `command="e2e.tick"`), "the relays count what they commit")
	require.Zero(t, metricSum(t, live, "periodic_command_failures_total", `command="e2e.tick"`),
		"relays never collide: a row another relay holds is skipped, not waited for or failed on")
}
