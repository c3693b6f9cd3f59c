package main_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/internal/redistopo"
)

// APPLIED ONCE THROUGH A SENTINEL FAILOVER: 1,500 orders of five owners
// are created through the test domain's POST /api/v1/td/orders (the api
// binary), then two relay processes with their worker on (td-apply, wired
// by the test domain) drain them while SENTINEL FAILOVER moves the master.
// The failover and the relays' redelivery of the window hand the consumer
// events it has already applied; its consumption record absorbs them.
// Asserted: every event delivered, every order applied by exactly one
// effect (of its own event), each owner's effects the sum of its orders,
// both relays logged the redelivery and duplicates did reach the consumer
// (counted from its log). A cluster leg would add nothing: CLUSTER
// FAILOVER is coordinated and hands consumers no duplicates
// (TestE2ERedisClusterFailover: 3,000 raw deliveries of 3,000).
func TestE2EOrdersAppliedOnceThroughSentinelFailover(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	const n, owners = 1500, 5
	topo := redistopo.Sentinel(t)
	w := newWorld(t, topo.URL)
	orders := createOrders(t, w, n, owners)

	env := []string{"WORKER_ENABLED=true", "WORKER_CONCURRENCY=4", "WORKER_RETRY_BASE=100ms", "WORKER_RETRY_MAX=1s",
		"RELAY_LOOPS=2", "RELAY_BATCH_SIZE=50", "RELAY_LEASE_TTL=2s"}
	relays := []*relayProc{w.startRelay("relay-a", env...), w.startRelay("relay-b", env...)}
	var newMaster string
	var atSwitch [2]int // delivered, applied when the failover began
	took := w.failoverMidDrain(n, relays, func() {
		atSwitch = [2]int{w.count(deliveredEvents), w.count(appliedOrders)}
		_, newMaster = topo.Failover(t)
	})
	waitRedelivered(t, relays)
	w.waitCount(n, appliedOrders)
	// The re-sent window is enqueued by now; let the consumer run it, so
	// an effect that is not idempotent shows below.
	left := w.waitQueueRan()

	requireAppliedOnce(t, w, orders)

	ignored := duplicatesLogged(relays)
	t.Logf("sentinel failover to %s (%s, begun at %d delivered, %d applied) during a drain of %d orders: %d duplicate deliveries absorbed by the consumption record, %d tasks still active (orphaned by the failover, recovered after their lease)",
		newMaster, took.Round(time.Millisecond), atSwitch[0], atSwitch[1], n, ignored, left)
	// Without duplicates this run proved nothing about a double effect.
	require.Positive(t, ignored, "the failover and the redelivery handed the consumer events it had already applied")
}
