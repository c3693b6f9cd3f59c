package main_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/internal/redistopo"
)

// REDIS CLUSTER: two relay processes whose REDIS_URL is a redis-cluster://
// seed list drain 3,000 events while every cluster master is replaced by
// its replica (CLUSTER FAILOVER). Every event is delivered and consumed,
// and no row is left claimed: the apps configure Asynq from the same
// setting and ride the slot moves out.
func TestE2ERedisClusterFailover(t *testing.T) {
	t.Parallel()
	topo := redistopo.Cluster(t)
	w := newWorld(t, topo.URL)
	w.startConsumer()
	relays := []*relayProc{
		w.startRelay("relay-a", "RELAY_LOOPS=1", "RELAY_BATCH_SIZE=5", "RELAY_LEASE_TTL=2s"),
		w.startRelay("relay-b", "RELAY_LOOPS=1", "RELAY_BATCH_SIZE=5", "RELAY_LEASE_TTL=2s"),
	}
	const n = 3000
	ids := w.commitMany("cl", n, 100)
	eventually(t, "a tenth delivered before the failover", func() (bool, string) {
		c := w.count(deliveredEvents)
		return c >= n/10, fmt.Sprintf("%d delivered", c)
	})
	start := time.Now()
	promoted := topo.ClusterFailover(t)
	took := time.Since(start)
	require.Len(t, promoted, 3)
	w.waitCount(n, deliveredEvents)
	w.waitCount(n, consumedAll)
	require.Zero(t, w.count("SELECT count(*) FROM tb_outbox_event WHERE status <> 3 OR lease_owner IS NOT NULL"))
	perEvent, total := w.cons.delivered()
	for _, id := range ids {
		require.GreaterOrEqual(t, perEvent[id], 1, "event %s delivered", id)
	}
	for _, p := range relays {
		require.False(t, p.exited(), "relay %s kept running through the failover", p.name)
	}
	t.Logf("redis cluster failover (3 masters replaced in %s) during a drain of %d: %d raw deliveries", took.Round(time.Millisecond), n, total)
}
