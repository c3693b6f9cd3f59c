//go:build pooler

package main_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/apps/internal/testdomain"
	"github.com/july/template/contracttests/testinfra"
)

// THE SERVICE BEHIND PGBOUNCER IN TRANSACTION MODE: DATABASE_URL is the
// pooler for migrate, the api and the relay, DATABASE_DIRECT_URL the
// server itself. `migrate check` and `migrate up` build an empty database
// (up on the direct URL); the api binary takes 400 concurrent creates of
// the test domain's orders, each sent again once all are answered
// (replayed, not created twice); the relay, its LISTEN on the direct URL
// and its probe heard, delivers every event and td-apply consumes each
// (order applied once, consumption recorded).
func TestE2EPoolerOrders(t *testing.T) {
	const n, owners = 400, 5
	r := testinfra.NewRedis(t)
	db := testinfra.NewDB(t, testinfra.DBOpts{})
	pooled := testinfra.PoolerURL(t, db.URL)
	dbEnv := []string{"DATABASE_URL=" + pooled, "DATABASE_DIRECT_URL=" + db.URL}

	for _, cmd := range []string{"check", "up"} {
		c := exec.Command(migrateBin(t), cmd)
		c.Env = append([]string{"PATH=" + os.Getenv("PATH")}, dbEnv...)
		out, err := c.CombinedOutput()
		require.NoError(t, err, "migrate %s through the pooler (up on the direct URL):\n%s", cmd, out)
	}

	w := &world{t: t, db: db, redisURL: r.URL, queue: r.QueueName("e2e")}
	t.Cleanup(func() { deleteQueue(t, r.URL, w.queue) })
	secret := []byte("relay-e2e-pooler-secret-0123456789abcdef-01")
	api := startAPIBin(t, w, string(secret), dbEnv...)
	relay := w.startRelay("relay-pool", append(dbEnv, "WORKER_ENABLED=true", "WORKER_CONCURRENCY=8", "RELAY_POLL_INTERVAL=2s")...)
	eventually(t, "the relay's LISTEN hears its probe", func() (bool, string) {
		v := relay.metric("outbox_listen_working")
		return v == 1, fmt.Sprintf("outbox_listen_working %v", v)
	})

	tokens := writerTokens(t, string(secret), owners)
	send := func(i int) (apitest.Response, error) {
		return postOrder(api, tokens[i%owners], fmt.Sprintf("td-pool-%05d", i), int64(100+i))
	}
	all := func(check func(i int, res apitest.Response) error) {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				res, err := send(i)
				if err == nil {
					err = check(i, res)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
	}
	start := time.Now()
	first := make([]string, n)
	all(func(i int, res apitest.Response) error {
		if res.Status != http.StatusCreated {
			return fmt.Errorf("create %d: status %d: %s", i, res.Status, res.Body)
		}
		first[i] = res.Body
		return nil
	})
	created := time.Since(start)
	var inProgress atomic.Int64
	all(func(i int, res apitest.Response) error {
		// A replay may meet the guard of its first request still held for
		// a moment (a guard write that timed out under load and landed
		// late, released in the background): 409 IDEMPOTENCY_IN_PROGRESS
		// is retryable, and a client retries it as Retry-After says.
		for try := 0; try < 20 && res.Status == http.StatusConflict && strings.Contains(res.Body, "IDEMPOTENCY_IN_PROGRESS"); try++ {
			inProgress.Add(1)
			time.Sleep(time.Second) // Retry-After: 1
			var err error
			if res, err = send(i); err != nil {
				return err
			}
		}
		if res.Status != http.StatusCreated || res.Header.Get("Idempotent-Replayed") != "true" || res.Body != first[i] {
			return fmt.Errorf("replay %d: status %d, replayed %q, body %s (first %s)", i, res.Status, res.Header.Get("Idempotent-Replayed"), res.Body, first[i])
		}
		return nil
	})
	require.Equal(t, n, w.count("SELECT count(*) FROM td_order"), "rule: a replay creates nothing")
	require.Equal(t, n, w.count("SELECT count(*) FROM tb_outbox_event WHERE event_type = ?", testdomain.EventCreated))

	w.waitCount(n, deliveredOrders)
	w.waitCount(n, appliedOrders)
	w.waitCount(n, `SELECT count(*) FROM tb_outbox_event e WHERE e.event_type = ?
		AND EXISTS (SELECT 1 FROM tb_outbox_consumption c WHERE c.event_id = e.event_id)`, testdomain.EventCreated)
	var orders []testdomain.OrderView
	for _, body := range first {
		var o testdomain.OrderView
		require.NoError(t, json.Unmarshal([]byte(body), &o))
		orders = append(orders, o)
	}
	requireAppliedOnce(t, w, orders)

	var p50 float64
	require.NoError(t, db.Bun.NewRaw(`SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM delivered_at - created_at))
		FROM tb_outbox_event WHERE event_type = ?`, testdomain.EventCreated).Scan(t.Context(), &p50))
	require.Equal(t, 1.0, relay.metric("outbox_listen_working"))
	require.NotContains(t, relay.logs.String(), "DATABASE_DIRECT_URL", "rule: no warning with a direct LISTEN")
	require.Empty(t, relay.errorLines())
	t.Logf("replays retried after 409 IDEMPOTENCY_IN_PROGRESS: %d", inProgress.Load())
	t.Logf("behind PgBouncer (transaction mode): %d concurrent orders created in %s and replayed; all delivered, applied and recorded in %s; commit-to-delivered p50 %.0f ms under the burst (not the wake-up: see docs/performance.md)",
		n, created.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), p50*1000)
}
