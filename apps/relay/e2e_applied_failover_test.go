// examples: delete this file (it credits through the examples' top-up consumer; make remove-examples)
package main_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/redisurl"
	"github.com/july/template/examples/topup"
	"github.com/july/template/internal/redistopo"
)

// TOP-UP THROUGH A SENTINEL FAILOVER: 1,500 top-up orders of five agents
// are created through the example's own POST /api/v1/topups (the api
// binary), then two relay processes with their
// worker on (the example's crediter, wired by examples/topup.Domain) drain
// them while SENTINEL FAILOVER moves the master. The failover and the
// relays' redelivery of the window hand the crediter events it has already
// credited; the ledger's unique order_id absorbs them. Asserted: every
// event delivered, every order credited by exactly one ledger entry (of its
// own event), each wallet's balance the sum of its orders and its version
// their count, both relays logged the redelivery and duplicates did reach
// the crediter (counted from its log). A cluster leg would add nothing:
// CLUSTER FAILOVER is coordinated and hands consumers no duplicates
// (TestE2ERedisClusterFailover: 3,000 raw deliveries of 3,000).
func TestE2ETopupCreditedOnceThroughSentinelFailover(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	const n, agents = 1500, 5
	topo := redistopo.Sentinel(t)
	w := newWorld(t, topo.URL)
	orders := createTopups(t, w, n, agents)

	env := []string{"WORKER_ENABLED=true", "WORKER_CONCURRENCY=4", "WORKER_RETRY_BASE=100ms", "WORKER_RETRY_MAX=1s",
		"RELAY_LOOPS=2", "RELAY_BATCH_SIZE=50", "RELAY_LEASE_TTL=2s"}
	relays := []*relayProc{w.startRelay("relay-a", env...), w.startRelay("relay-b", env...)}
	var newMaster string
	var atSwitch [2]int // delivered, credited when the failover began
	took := w.failoverMidDrain(n, relays, func() {
		atSwitch = [2]int{w.count(deliveredEvents), w.count(creditedOrders, topup.StatusCredited)}
		_, newMaster = topo.Failover(t)
	})
	waitRedelivered(t, relays)
	w.waitCount(n, creditedOrders, topup.StatusCredited)
	// The re-sent window is enqueued by now; let the crediter run it, so a
	// credit that is not idempotent shows in the balances below.
	left := w.waitQueueRan()

	requireCreditedOnce(t, w, orders)

	credited, ignored := creditLog(relays)
	require.GreaterOrEqual(t, credited, n, "credits logged by the relays' workers")
	t.Logf("topup sentinel failover to %s (%s, begun at %d delivered, %d credited) during a drain of %d orders: %d credits, %d duplicate deliveries absorbed by the ledger, %d tasks still active (orphaned by the failover, recovered after their lease)",
		newMaster, took.Round(time.Millisecond), atSwitch[0], atSwitch[1], n, credited, ignored, left)
	// Without duplicates this run proved nothing about double credit.
	require.Positive(t, ignored, "the failover and the redelivery handed the crediter events it had already credited")
}

const creditedOrders = "SELECT count(*) FROM ex_topup_order WHERE status = ?"

// createTopups creates n orders for agents agent-0..agent-(agents-1) with
// distinct amounts through POST /api/v1/topups of the api binary (on w's
// database and Redis), four requests at a time, and returns what the API
// answered. env ("KEY=VALUE") goes to the api binary over w's settings.
func createTopups(t *testing.T, w *world, n, agents int, env ...string) []topup.OrderView {
	t.Helper()
	secret := "relay-e2e-topup-secret-0123456789abcdef-0123"
	url := startAPIBin(t, w, secret, env...)
	tokens := make([]string, agents)
	for a := range tokens {
		tokens[a] = apitest.Token(t, []byte(secret), fmt.Sprintf("agent-%d", a), topup.RoleAgent)
	}
	start := time.Now()
	orders := make([]topup.OrderView, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	const workers = 4
	for g := range workers {
		wg.Go(func() {
			for i := g; i < n; i += workers {
				errs[i] = func() error {
					res, err := apitest.Send(t.Context(), url, apitest.Request{
						Method: http.MethodPost, Path: "/api/v1/topups", Token: tokens[i%agents],
						Body:   fmt.Sprintf(`{"amount_cents":%d,"channel":"wechat"}`, 100+i),
						Header: map[string]string{"X-Request-ID": fmt.Sprintf("topup-fo-%05d", i)},
					})
					if err != nil {
						return err
					}
					if res.Status != http.StatusCreated {
						return fmt.Errorf("status %d: %s", res.Status, res.Body)
					}
					return json.Unmarshal([]byte(res.Body), &orders[i])
				}()
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...), "create top-ups")
	require.Equal(t, n, w.count("SELECT count(*) FROM tb_outbox_event WHERE event_type = ?", topup.EventCreated))
	t.Logf("created %d top-ups through the api binary in %s", n, time.Since(start).Round(time.Millisecond))
	return orders
}

// waitQueueRan waits until w's queue holds no pending, scheduled or retry
// task and returns the active ones left: a task the old master had handed
// out and whose completion it dropped stays active until asynq's recoverer
// finds its lease expired, a minute or more later.
func (w *world) waitQueueRan() int {
	w.t.Helper()
	topo, err := redisurl.Parse(w.redisURL)
	require.NoError(w.t, err)
	ins := asynq.NewInspector(queue.ConnOpt(topo))
	defer ins.Close()
	var active int
	eventually(w.t, "the queue ran every task it was given", func() (bool, string) {
		q, err := ins.GetQueueInfo(w.queue)
		if err != nil {
			return false, err.Error()
		}
		active = q.Active
		return q.Pending+q.Scheduled+q.Retry == 0, fmt.Sprintf("%d pending, %d scheduled, %d retry, %d active",
			q.Pending, q.Scheduled, q.Retry, q.Active)
	})
	return active
}

// creditLog counts the relays' "topup credited" lines and the duplicate
// deliveries the crediter ignored.
func creditLog(relays []*relayProc) (credited, ignored int) {
	for _, p := range relays {
		for line := range strings.SplitSeq(p.logs.String(), "\n") {
			var rec struct {
				Msg string `json:"msg"`
			}
			if json.Unmarshal([]byte(line), &rec) != nil { // go-redis writes plain lines too
				continue
			}
			switch rec.Msg {
			case "topup credited":
				credited++
			case "topup already credited; duplicate delivery ignored":
				ignored++
			}
		}
	}
	return credited, ignored
}
