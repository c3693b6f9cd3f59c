package main_test

import (
	"fmt"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/redisurl"
	"github.com/july/template/internal/redistopo"
)

// SENTINEL MASTER SWITCH after everything was consumed: the switch is a
// loss signal, and the reconciler publishes again only what is unconsumed
// and missing from the queue, so nothing here. The completed tasks are
// deleted first, so a task sent again would run again and show as a
// duplicate (a new master need not hold them either).
func TestE2ESentinelSwitchResendsNothingConsumed(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	const n = 60
	topo := redistopo.Sentinel(t)
	w := newWorld(t, topo.URL)
	orders := createOrders(t, w, n, 3)
	relays := []*relayProc{w.startRelay("relay-a", append([]string{"WORKER_ENABLED=true"}, lossEnv...)...)}
	w.waitApplied(n, stallLimit, false)
	w.waitQueueRan()

	rt, err := redisurl.Parse(w.redisURL)
	require.NoError(t, err)
	ins := asynq.NewInspector(queue.ConnOpt(rt))
	t.Cleanup(func() { _ = ins.Close() })
	_, err = ins.DeleteAllCompletedTasks(w.queue)
	require.NoError(t, err)

	topo.Failover(t)
	eventually(t, "the relay heard the master switch", func() (bool, string) {
		s := metricSum(t, relays, "outbox_queue_loss_signals_total", `signal="master_switch"`)
		return s > 0, fmt.Sprintf("%v master_switch signals", s)
	})
	// Two more passes: the second began after the signal (a pass in
	// progress then may have begun before it).
	passes := func() float64 { return metricSum(t, relays, "outbox_reconcile_passes_total", "") }
	before := passes()
	eventually(t, "two reconcile passes after the signal", func() (bool, string) {
		p := passes()
		return p >= before+2, fmt.Sprintf("%v passes, waiting for %v", p, before+2)
	})
	w.waitQueueRan()
	q, err := ins.GetQueueInfo(w.queue)
	require.NoError(t, err)
	require.Zero(t, q.Size+q.Completed, "no task was published again after the switch (%+v)", q)
	require.Zero(t, duplicatesLogged(relays), "the consumer saw no event twice")
	requireAppliedOnce(t, w, orders)
}
