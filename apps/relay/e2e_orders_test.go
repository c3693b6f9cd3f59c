package main_test

// The foundation's end-to-end tests through the api and relay binaries
// drive the test-only domain (apps/internal/testdomain): orders created
// through its idempotent POST, one td.order.created event each, applied by
// the relay's worker (consumer td-apply: the consumption record, the
// td_effect row and status 2 in one transaction).

import (
	"context"
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
	"github.com/july/template/apps/internal/testdomain"
	"github.com/july/template/core/redisurl"
)

const (
	appliedOrders   = "SELECT count(*) FROM td_order WHERE status = 2"
	deliveredOrders = "SELECT count(*) FROM tb_outbox_event WHERE status = 3 AND event_type = '" + testdomain.EventCreated + "'"
)

// writerTokens returns a td_writer token for owner-0..owner-(n-1).
func writerTokens(t *testing.T, secret string, n int) []string {
	t.Helper()
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = apitest.Token(t, []byte(secret), fmt.Sprintf("owner-%d", i), testdomain.RoleWriter)
	}
	return tokens
}

// postOrder creates one order through api as token's owner; key is its
// X-Request-ID (the idempotency key).
func postOrder(api, token, key string, amount int64) (apitest.Response, error) {
	return apitest.Send(context.Background(), api, apitest.Request{
		Method: http.MethodPost, Path: testdomain.RouteOrders, Token: token,
		Body:   fmt.Sprintf(`{"amount":%d,"note":"e2e"}`, amount),
		Header: map[string]string{"X-Request-ID": key},
	})
}

// createOrders creates n orders for owners owner-0..owner-(owners-1) with
// distinct amounts through the api binary (on w's database and Redis),
// four requests at a time, and returns what the API answered. env
// ("KEY=VALUE") goes to the api binary over w's settings.
func createOrders(t *testing.T, w *world, n, owners int, env ...string) []testdomain.OrderView {
	t.Helper()
	secret := "relay-e2e-orders-secret-0123456789abcdef-0123"
	url := startAPIBin(t, w, secret, env...)
	tokens := writerTokens(t, secret, owners)
	start := time.Now()
	orders := make([]testdomain.OrderView, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	const workers = 4
	for g := range workers {
		wg.Go(func() {
			for i := g; i < n; i += workers {
				errs[i] = func() error {
					res, err := postOrder(url, tokens[i%owners], fmt.Sprintf("%s-%05d", w.queue, i), int64(100+i))
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
	require.NoError(t, errors.Join(errs...), "create orders")
	require.Equal(t, n, w.count("SELECT count(*) FROM tb_outbox_event WHERE event_type = ?", testdomain.EventCreated))
	t.Logf("created %d orders through the api binary in %s", n, time.Since(start).Round(time.Millisecond))
	return orders
}

// waitApplied waits until at least n orders are applied (or, with give,
// until applying stalled for stall) and reports whether they were.
func (w *world) waitApplied(n int, stall time.Duration, give bool) bool {
	w.t.Helper()
	return waitProgress(w.t, "orders applied", stall, give, func() (int, bool, string) {
		c := w.count(appliedOrders)
		return c, c >= n, fmt.Sprintf("%d applied, waiting for %d", c, n)
	})
}

// requireAppliedOnce checks the effects against the orders: one td_effect
// per order, of its own event, with its owner and amount; each owner's
// effects add up to the sum of its orders; every event's consumption
// recorded by td-apply; no consumer failure.
func requireAppliedOnce(t *testing.T, w *world, orders []testdomain.OrderView) {
	t.Helper()
	require.Zero(t, w.count(`SELECT count(*) FROM td_order o WHERE o.status <> 2 OR NOT EXISTS (SELECT 1 FROM td_effect f
		WHERE f.order_id = o.id AND f.owner = o.owner AND f.amount = o.amount)`), "every order is applied, its effect its own")
	require.Equal(t, len(orders), w.count("SELECT count(*) FROM td_effect"), "no effect without its order")
	require.Zero(t, w.count(`SELECT count(*) FROM td_effect f JOIN tb_outbox_event e ON e.aggregate_id = f.order_id
		WHERE e.event_type = ? AND e.event_id::text <> f.event_id`, testdomain.EventCreated), "each effect is its order's own event")
	want := map[string][2]int64{}
	for _, o := range orders {
		v := want[o.Owner]
		want[o.Owner] = [2]int64{v[0] + o.Amount, v[1] + 1}
	}
	var sums []struct {
		Owner  string
		Amount int64
		N      int64
	}
	require.NoError(t, w.db.Bun.NewRaw("SELECT owner, sum(amount)::bigint AS amount, count(*) AS n FROM td_effect GROUP BY owner").Scan(t.Context(), &sums))
	got := map[string][2]int64{}
	for _, s := range sums {
		got[s.Owner] = [2]int64{s.Amount, s.N}
	}
	require.Equal(t, want, got, "each owner's effects add up to its orders ([sum, count])")
	require.Equal(t, len(orders), w.count(`SELECT count(*) FROM tb_outbox_consumption c JOIN tb_outbox_event e USING (event_id)
		WHERE e.event_type = ? AND c.consumer = ?`, testdomain.EventCreated, testdomain.ConsumerName), "the worker recorded the consumption of every order event")
	require.Zero(t, w.count("SELECT count(*) FROM tb_outbox_consumer_failure"), "no consumer failure")
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

// duplicatesLogged counts the duplicate deliveries td-apply logged
// ignoring in the relays' logs.
func duplicatesLogged(relays []*relayProc) int {
	n := 0
	for _, p := range relays {
		for line := range strings.SplitSeq(p.logs.String(), "\n") {
			var rec struct {
				Msg string `json:"msg"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == testdomain.LogDuplicate { // go-redis writes plain lines too
				n++
			}
		}
	}
	return n
}
