package main_test

import (
	"testing"
	"time"

	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/internal/redistopo"
)

// APPLIED ONCE THROUGH A SENTINEL FAILOVER: 1,500 orders of five owners
// are created through the test domain's POST /api/v1/td/orders (the api
// binary), then two relay processes with their worker on (td-apply, wired
// by the test domain) drain them while SENTINEL FAILOVER moves the master.
// The failover can hand the consumer events it has already applied (a task
// active on the old master runs again after its lease); its consumption
// record absorbs them, and the reconcilers publish again only what is
// unconsumed and missing. Asserted: every event delivered, every order
// applied by exactly one effect (of its own event), each owner's effects
// the sum of its orders, both relays heard the switch. A cluster leg would add nothing: CLUSTER
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
	waitSwitchHeard(t, relays)
	w.waitCount(n, appliedOrders)
	// Let the consumer run what was published again, so an effect that is
	// not idempotent shows below.
	left := w.waitQueueRan()

	requireAppliedOnce(t, w, orders)

	ignored := duplicatesLogged(relays)
	t.Logf("sentinel failover to %s (%s, begun at %d delivered, %d applied) during a drain of %d orders: %d duplicate deliveries absorbed by the consumption record, %d tasks still active (orphaned by the failover, recovered after their lease)",
		newMaster, took.Round(time.Millisecond), atSwitch[0], atSwitch[1], n, ignored, left)
}
