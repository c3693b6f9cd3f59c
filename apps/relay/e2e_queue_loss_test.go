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
	"github.com/july/template/apps/internal/testdomain"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/redisurl"
	"github.com/july/template/internal/redistopo"
)

// THE QUEUE THAT FORGETS. Redis loses tasks it acknowledged in ordinary
// production events; the outbox rows already say delivered. Each test
// below creates orders through the test domain's API, lets Redis forget
// in one of those ways, and requires every order applied exactly once by
// the relay's own worker (the effects are the judge): the relays' outbox
// reconciler finds the delivered events no consumer recorded whose task
// the queue no longer holds, and publishes them again.

// backlogLost runs the first test's scenario: n orders' events delivered
// to the queue while no worker runs (the consumers' outage), Redis
// SIGKILLed and restarted empty, then a relay with its worker on. It
// returns the world, the orders, the relays and whether every order was
// applied.
func backlogLost(t *testing.T, n int, env []string, stall time.Duration, give bool) (*world, []testdomain.OrderView, []*relayProc, bool) {
	t.Helper()
	red := testinfra.StartRedisProc(t)
	w := newWorld(t, red.URL)
	orders := createOrders(t, w, n, 5)
	outage := w.startRelay("relay-outage", env...) // WORKER_ENABLED=false: nothing consumes
	w.waitCountProgress(n, deliveredOrders)
	require.Equal(t, n, w.queued(), "the backlog waits in the queue")

	red.Stop(t) // SIGKILL; no persistence: it comes back empty
	red.Start(t)
	lost := time.Now()
	worker := w.startRelay("relay-worker", append(env, "WORKER_ENABLED=true")...)
	ok := w.waitApplied(n, stall, give)
	if ok {
		t.Logf("redis restarted empty under a backlog of %d delivered orders: all applied %s after the loss",
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

// REDIS RESTARTED EMPTY: the measured defect (0 of 50 consumed, every row
// delivered, not a line logged). The relays see the restart (run_id, the
// canary) and every order is applied exactly once.
func TestE2EOrdersAppliedAfterQueueRedisRestartedEmpty(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	const n = 300
	w, orders, relays, _ := backlogLost(t, n, lossEnv, stallLimit, false)
	requireAppliedOnce(t, w, orders)
	require.Positive(t, metricSum(t, relays[:1], "outbox_queue_loss_signals_total", `signal="restart"`),
		"the relay that lived through the restart saw it")
	require.GreaterOrEqual(t, metricSum(t, relays, "outbox_republished_total", ""), float64(n),
		"every lost task was published again")
}

// PLANTED BREAK: the same scenario with the reconciler off (the loss
// detection the first test relies on) applies nothing: the queue forgot
// the tasks and nothing else would send them.
func TestE2EQueueLossUnseenWithoutReconcile(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	const n = 50
	env := append([]string{"RELAY_RECONCILE=false"}, lossEnv...)
	w, _, _, ok := backlogLost(t, n, env, 10*time.Second, true)
	require.False(t, ok, "without the reconciler the lost orders must stay unapplied, or the first test proves nothing")
	require.Zero(t, w.count(appliedOrders))
	require.Equal(t, n, w.count(deliveredOrders), "and every row still says delivered")
}

// drainLosing creates n orders, runs two relays with their workers, calls
// lose once a tenth is applied, and requires every order applied once.
func drainLosing(t *testing.T, w *world, n int, lose func()) []*relayProc {
	t.Helper()
	orders := createOrders(t, w, n, 5)
	env := append([]string{"WORKER_ENABLED=true"}, lossEnv...)
	relays := []*relayProc{w.startRelay("relay-a", env...), w.startRelay("relay-b", env...)}
	w.waitApplied(n/10, stallLimit, false)
	start := time.Now()
	lose()
	w.waitApplied(n, stallLimit, false)
	t.Logf("every order of %d applied %s after the loss; %v republished",
		n, time.Since(start).Round(time.Millisecond), metricSum(t, relays, "outbox_republished_total", ""))
	requireAppliedOnce(t, w, orders)
	for _, p := range relays {
		require.False(t, p.exited(), "relay %s kept running", p.name)
	}
	return relays
}

// FLUSHDB of the queue's database mid-drain.
func TestE2EOrdersAppliedThroughFlushDB(t *testing.T) {
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
func TestE2EOrdersAppliedThroughEviction(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	const n = 300
	red := testinfra.StartRedisProc(t)
	w := newWorld(t, red.URL)
	c := redis.NewClient(&redis.Options{Addr: strings.TrimSuffix(strings.TrimPrefix(red.URL, "redis://"), "/0")})
	t.Cleanup(func() { _ = c.Close() })
	ctx := t.Context()
	orders := createOrders(t, w, n, 5)
	outage := w.startRelay("relay-outage", lossEnv...)
	w.waitCountProgress(n, deliveredOrders)

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
	w.waitApplied(n, stallLimit, false)
	t.Logf("after the burst (and the relay's republishing during it) %d task records of %d, %d ids in the pending list; all applied %s later",
		len(records), n, listed, time.Since(lost).Round(time.Millisecond))
	requireAppliedOnce(t, w, orders)
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
func TestE2EOrdersAppliedThroughSentinelMasterKill(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	topo := redistopo.Sentinel(t)
	w := newWorld(t, topo.URL)
	drainLosing(t, w, 600, func() { topo.Kill(t, topo.Master(t)) })
}

// CLUSTER MASTER SIGKILLED mid-drain: the cluster promotes the replica of
// the queue's slot on its own after the node timeout (no CLUSTER FAILOVER).
func TestE2EOrdersAppliedThroughClusterMasterKill(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	topo := redistopo.Cluster(t)
	w := newWorld(t, topo.URL)
	drainLosing(t, w, 600, func() { topo.Kill(t, topo.SlotMaster(t, "asynq:{"+w.queue+"}:pending")) })
}
