// examples: delete this file (it credits through the examples' top-up consumer; make remove-examples)
package main_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/redisurl"
	"github.com/july/template/examples/topup"
	"github.com/july/template/internal/redistopo"
)

// THE QUEUE THAT FORGETS. Redis loses tasks it acknowledged in ordinary
// production events; the outbox rows already say delivered. Each test
// below commits top-ups through the example's API, lets Redis forget in
// one of those ways, and requires every order credited exactly once by
// the relay's own worker (the wallets are the judge): the relays' outbox
// reconciler finds the delivered events no consumer recorded whose task
// the queue no longer holds, and publishes them again.

const deliveredTopups = "SELECT count(*) FROM tb_outbox_event WHERE status = 3 AND event_type = '" + topup.EventCreated + "'"

// waitCredited waits until at least n orders are credited (or, with give,
// until crediting stalled for stall) and reports whether they were.
func (w *world) waitCredited(n int, stall time.Duration, give bool) bool {
	w.t.Helper()
	return waitProgress(w.t, "top-ups credited", stall, give, func() (int, bool, string) {
		c := w.count(creditedOrders, topup.StatusCredited)
		return c, c >= n, fmt.Sprintf("%d credited, waiting for %d", c, n)
	})
}

// requireCreditedOnce checks the wallets: one ledger entry per order, of
// its own event; each wallet the sum of its orders, its version their count.
func requireCreditedOnce(t *testing.T, w *world, orders []topup.OrderView) {
	t.Helper()
	require.Zero(t, w.count(`SELECT count(*) FROM ex_topup_order o WHERE (SELECT count(*) FROM ex_topup_ledger l
		WHERE l.order_id = o.id) <> 1`), "every order has exactly one ledger entry")
	require.Equal(t, len(orders), w.count("SELECT count(*) FROM ex_topup_ledger"), "no ledger entry without its order")
	require.Zero(t, w.count(`SELECT count(*) FROM ex_topup_ledger l JOIN tb_outbox_event e ON e.aggregate_id = l.order_id
		WHERE e.event_type = ? AND e.event_id::text <> l.event_id`, topup.EventCreated), "each entry is its order's own event")
	want := map[string][2]int64{}
	for _, o := range orders {
		v := want[o.AgentID]
		want[o.AgentID] = [2]int64{v[0] + o.AmountCents, v[1] + 1}
	}
	var wallets []topup.Wallet
	require.NoError(t, w.db.Bun.NewSelect().Model(&wallets).Scan(t.Context()))
	got := map[string][2]int64{}
	for _, wl := range wallets {
		got[wl.AgentID] = [2]int64{wl.BalanceCents, wl.Version}
	}
	require.Equal(t, want, got, "each wallet holds the sum of its orders ([balance, version]; a double credit adds to both)")
	require.Equal(t, len(orders), w.count(`SELECT count(*) FROM tb_outbox_consumption c JOIN tb_outbox_event e USING (event_id)
		WHERE e.event_type = ?`, topup.EventCreated), "the worker recorded the consumption of every top-up event")
}

// backlogLost runs the first test's scenario: n top-ups delivered to the
// queue while no worker runs (the consumers' outage), Redis SIGKILLed and
// restarted empty, then a relay with its worker on. It returns the world,
// the orders, the relays and whether every order was credited.
func backlogLost(t *testing.T, n int, env []string, stall time.Duration, give bool) (*world, []topup.OrderView, []*relayProc, bool) {
	t.Helper()
	red := testinfra.StartRedisProc(t)
	w := newWorld(t, red.URL)
	orders := createTopups(t, w, n, 5)
	outage := w.startRelay("relay-outage", env...) // WORKER_ENABLED=false: nothing consumes
	w.waitCountProgress(n, deliveredTopups)
	require.Equal(t, n, w.queued(), "the backlog waits in the queue")

	red.Stop(t) // SIGKILL; no persistence: it comes back empty
	red.Start(t)
	lost := time.Now()
	worker := w.startRelay("relay-worker", append(env, "WORKER_ENABLED=true")...)
	ok := w.waitCredited(n, stall, give)
	if ok {
		t.Logf("redis restarted empty under a backlog of %d delivered top-ups: all credited %s after the loss",
			n, time.Since(lost).Round(time.Millisecond))
	}
	return w, orders, []*relayProc{outage, worker}, ok
}

// queued is how many tasks the world's queue holds, in any state.
func (w *world) queued() int {
	w.t.Helper()
	topo, err := redisurl.Parse(w.redisURL)
	require.NoError(w.t, err)
	ins := asynq.NewInspector(queue.ConnOpt(topo))
	defer ins.Close()
	q, err := ins.GetQueueInfo(w.queue)
	if errors.Is(err, asynq.ErrQueueNotFound) || err != nil && strings.Contains(err.Error(), "NOT_FOUND") {
		return 0 // its registration was evicted or flushed too
	}
	require.NoError(w.t, err)
	return q.Size + q.Completed
}

// REDIS RESTARTED EMPTY: the measured defect (0 of 50 credited, every row
// delivered, not a line logged). The relays see the restart (run_id, the
// canary) and every order is credited exactly once.
func TestE2ETopupsCreditedAfterQueueRedisRestartedEmpty(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	const n = 300
	w, orders, relays, _ := backlogLost(t, n, lossEnv, stallLimit, false)
	requireCreditedOnce(t, w, orders)
	require.Positive(t, metricSum(t, relays[:1], "outbox_queue_loss_signals_total", `signal="restart"`),
		"the relay that lived through the restart saw it")
	require.GreaterOrEqual(t, metricSum(t, relays, "outbox_republished_total", ""), float64(n),
		"every lost task was published again")
	require.Zero(t, w.count("SELECT count(*) FROM tb_outbox_consumer_failure"), "no consumer failure")
}

// PLANTED BREAK: the same scenario with the reconciler off (the loss
// detection the first test relies on) credits nothing: the queue forgot
// the tasks and nothing else would send them.
func TestE2EQueueLossUnseenWithoutReconcile(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	const n = 50
	env := append([]string{"RELAY_RECONCILE=false"}, lossEnv...)
	w, _, _, ok := backlogLost(t, n, env, 10*time.Second, true)
	require.False(t, ok, "without the reconciler the lost top-ups must stay uncredited, or the first test proves nothing")
	require.Zero(t, w.count(creditedOrders, topup.StatusCredited))
	require.Equal(t, n, w.count(deliveredTopups), "and every row still says delivered")
}

// drainLosing commits n top-ups, runs two relays with their workers, calls
// lose once a tenth is credited, and requires every order credited once.
func drainLosing(t *testing.T, w *world, n int, lose func()) []*relayProc {
	t.Helper()
	orders := createTopups(t, w, n, 5)
	env := append([]string{"WORKER_ENABLED=true"}, lossEnv...)
	relays := []*relayProc{w.startRelay("relay-a", env...), w.startRelay("relay-b", env...)}
	w.waitCredited(n/10, stallLimit, false)
	start := time.Now()
	lose()
	w.waitCredited(n, stallLimit, false)
	t.Logf("every order of %d credited %s after the loss; %v republished",
		n, time.Since(start).Round(time.Millisecond), metricSum(t, relays, "outbox_republished_total", ""))
	requireCreditedOnce(t, w, orders)
	for _, p := range relays {
		require.False(t, p.exited(), "relay %s kept running", p.name)
	}
	return relays
}

// FLUSHDB of the queue's database mid-drain.
func TestE2ETopupsCreditedThroughFlushDB(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	red := testinfra.StartRedisProc(t)
	w := newWorld(t, red.URL)
	c := redis.NewClient(&redis.Options{Addr: strings.TrimSuffix(strings.TrimPrefix(red.URL, "redis://"), "/0")})
	t.Cleanup(func() { _ = c.Close() })
	relays := drainLosing(t, w, 600, func() { require.NoError(t, c.FlushDB(t.Context()).Err()) })
	require.Positive(t, metricSum(t, relays, "outbox_queue_loss_signals_total", `signal="canary_missing"`))
}

// EVICTION: the queue's Redis runs allkeys-lru under maxmemory; a burst of
// other keys evicts tasks (and asynq's lists) while the backlog waits.
func TestE2ETopupsCreditedThroughEviction(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	const n = 300
	red := testinfra.StartRedisProc(t)
	w := newWorld(t, red.URL)
	c := redis.NewClient(&redis.Options{Addr: strings.TrimSuffix(strings.TrimPrefix(red.URL, "redis://"), "/0")})
	t.Cleanup(func() { _ = c.Close() })
	ctx := t.Context()
	orders := createTopups(t, w, n, 5)
	outage := w.startRelay("relay-outage", lossEnv...)
	w.waitCountProgress(n, deliveredTopups)

	used := usedMemory(t, c)
	require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used+256<<10, 10)).Err())
	for i := range 8000 { // 8 MB through a 256 KB margin
		require.NoError(t, c.Set(ctx, fmt.Sprintf("cache:%d", i), strings.Repeat("x", 1024), 0).Err())
	}
	records, err := c.Keys(ctx, "asynq:{"+w.queue+"}:t:*").Result()
	require.NoError(t, err)
	listed, err := c.LLen(ctx, "asynq:{"+w.queue+"}:pending").Result()
	require.NoError(t, err)

	// The operator gives the queue room again (the policy stays).
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used+64<<20, 10)).Err())
	lost := time.Now()
	worker := w.startRelay("relay-worker", append([]string{"WORKER_ENABLED=true"}, lossEnv...)...)
	w.waitCredited(n, stallLimit, false)
	t.Logf("after the burst (and the relay's republishing during it) %d task records of %d, %d ids in the pending list; all credited %s later",
		len(records), n, listed, time.Since(lost).Round(time.Millisecond))
	requireCreditedOnce(t, w, orders)
	relays := []*relayProc{outage, worker}
	require.Positive(t, metricSum(t, relays, "outbox_queue_loss_signals_total", `signal="eviction"`), "the relays saw the evictions")
	require.Positive(t, metricSum(t, relays, "outbox_republished_total", ""), "and published what was lost again")
}

func usedMemory(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(t.Context(), "memory").Result()
	require.NoError(t, err)
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("INFO memory has no used_memory")
	return 0
}

// SENTINEL MASTER SIGKILLED mid-drain (not SENTINEL FAILOVER): the
// sentinels promote the replica after down-after; writes the old master
// acknowledged and never replicated are gone.
func TestE2ETopupsCreditedThroughSentinelMasterKill(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	topo := redistopo.Sentinel(t)
	w := newWorld(t, topo.URL)
	drainLosing(t, w, 600, func() { topo.Kill(t, topo.Master(t)) })
}

// CLUSTER MASTER SIGKILLED mid-drain: the cluster promotes the replica of
// the queue's slot on its own after the node timeout (no CLUSTER FAILOVER).
func TestE2ETopupsCreditedThroughClusterMasterKill(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	topo := redistopo.Cluster(t)
	w := newWorld(t, topo.URL)
	drainLosing(t, w, 600, func() { topo.Kill(t, topo.SlotMaster(t, "asynq:{"+w.queue+"}:pending")) })
}
