package main_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/internal/pgtopo"
)

// RESTORED DATABASE (issue 43, item 1): Postgres goes back to a point
// where its events were delivered but their effects not yet committed,
// while Redis still holds their tasks as completed. The "restore" is a
// standby cut off from its primary before the consumer ran, then promoted
// (a new timeline, as a point-in-time restore makes). The consumer records
// no evidence of its own, so a completed task is what the reconciler
// would take as consumption: before relay.History, none of the effects
// came back. Now the new relay sees the timeline change, the queue
// forgets its tasks, and the reconciler publishes every event again.
func TestE2EEffectsComeBackAfterRestore(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	pair := pgtopo.Start(t)
	w := privateWorld(t, pair.URL, "restore")

	const n = 200
	w.commitMany("rs", n, 50)
	first := w.startRelay("relay-a", lossEnv...)
	w.waitCountProgress(n, deliveredEvents)
	pair.CaughtUp(t)

	// Cut the standby off: the effects below reach the primary alone.
	primary, err := testinfra.OpenBun("postgres://postgres@" + pair.Primary + "/postgres?sslmode=disable")
	require.NoError(t, err)
	t.Cleanup(func() { _ = primary.Close() })
	standby, err := testinfra.OpenBun("postgres://postgres@" + pair.Standby + "/postgres?sslmode=disable")
	require.NoError(t, err)
	t.Cleanup(func() { _ = standby.Close() })
	for _, q := range []string{"ALTER SYSTEM SET synchronous_standby_names = ''", "SELECT pg_reload_conf()"} {
		_, err := primary.ExecContext(t.Context(), q)
		require.NoError(t, err, q)
	}
	for _, q := range []string{"ALTER SYSTEM SET primary_conninfo = ''", "SELECT pg_reload_conf()"} {
		_, err := standby.ExecContext(t.Context(), q)
		require.NoError(t, err, q)
	}
	eventually(t, "the standby stops receiving", func() (bool, string) {
		var c int
		err := standby.NewRaw("SELECT count(*) FROM pg_stat_wal_receiver").Scan(t.Context(), &c)
		return err == nil && c == 0, fmt.Sprintf("%d receivers (%v)", c, err)
	})

	w.startConsumer()
	w.waitCountProgress(n, consumedAll) // on the primary; Redis holds n completed tasks
	first.kill()
	pair.Failover(t)
	eventually(t, "the restored database has the deliveries and none of the effects", func() (bool, string) {
		var d, c int
		err := standby.NewRaw("SELECT ("+deliveredEvents+"), ("+consumedAll+")").Scan(t.Context(), &d, &c)
		return err == nil && d == n && c == 0, fmt.Sprintf("%d delivered, %d consumed (%v)", d, c, err)
	})

	second := w.startRelay("relay-b", lossEnv...)
	waitProgress(t, "every effect applied again", stallLimit, false, func() (int, bool, string) {
		var c int
		err := standby.NewRaw(consumedAll).Scan(t.Context(), &c) // the new primary
		return c, c == n, fmt.Sprintf("%d of %d consumed (%v)", c, n, err)
	})
	require.Positive(t, metricSum(t, []*relayProc{second}, "outbox_republished_total", ""), "the effects came back through the reconciler")
	require.Equal(t, 1.0, metricSum(t, []*relayProc{second}, "outbox_queue_loss_signals_total", `signal="database_restored"`), "the restore is counted once")
}
