package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/apps/internal/testdomain"
	"github.com/july/template/contracttests/testinfra"
)

// Item 2: Postgres refusing connections answers 503 DEPENDENCY_UNAVAILABLE
// (retryable, Retry-After, the request id) on every route that needs it,
// including a domain handler returning RunInTx's raw error, and the API
// recovers by itself when Postgres is back.
func TestPostgresOutage(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{proxied: true})
	agent := writer(t, "outage-agent")
	id := a.tdCreate(t, agent, "outage-order-0", 1000)

	a.pg.Down()
	calls := []apitest.Request{
		{Method: "POST", Path: testdomain.RouteOrders, Token: agent, Body: tdOrder(1000, 0), Header: map[string]string{"Idempotency-Key": "outage-order-1", "X-Request-ID": "outage-order-1"}},
		{Method: "GET", Path: testdomain.RouteOrders + "/" + id, Token: agent, Header: map[string]string{"X-Request-ID": "outage-read-0001"}},
		{Method: "PUT", Path: configsPath + keyFlag, Token: admin(t), Body: `{"value":true}`, Header: map[string]string{"X-Request-ID": "outage-read-0003"}},
	}
	for _, r := range calls {
		res := a.do(t, r)
		require.Equal(t, http.StatusServiceUnavailable, res.Status, "%s %s: %s\n%s", r.Method, r.Path, res.Body, a.logs.String())
		require.Equal(t, "DEPENDENCY_UNAVAILABLE", res.Error.Code, res.Body)
		require.True(t, res.Error.Retryable, res.Body)
		require.NotEmpty(t, res.Header.Get("Retry-After"), "%s %s: Retry-After", r.Method, r.Path)
		require.Equal(t, r.Header["X-Request-ID"], res.Error.RequestID)
		requireNothingInternal(t, res.Body)
	}
	ready := a.do(t, apitest.Request{Method: "GET", Path: "/readyz"})
	require.Equal(t, http.StatusServiceUnavailable, ready.Status, ready.Body)
	require.Equal(t, http.StatusOK, a.do(t, apitest.Request{Method: "GET", Path: "/healthz"}).Status)

	a.pg.Up(t)
	require.Eventually(t, func() bool {
		res, err := a.send(calls[0])
		return err == nil && res.Status == http.StatusCreated
	}, 15*time.Second, 100*time.Millisecond, "the API recovers by itself once Postgres answers; the retried key creates")
	require.Equal(t, http.StatusOK, a.do(t, apitest.Request{Method: "GET", Path: "/readyz"}).Status)
}

// Item 1: Redis down keeps the API ready (Postgres is what it cannot serve
// without): /readyz answers 200 "degraded" naming redis, a metric says so,
// /healthz is 200, and reads and creates still work.
func TestRedisOutageKeepsReady(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{proxied: true})
	ok := a.do(t, apitest.Request{Method: "GET", Path: "/readyz"})
	require.Equal(t, http.StatusOK, ok.Status, ok.Body)
	require.JSONEq(t, `{"status":"ok"}`, ok.Body)
	require.Equal(t, 1.0, a.gauge(t, "dependency_up", "dependency", "redis"))

	a.rd.Down()
	ready := a.do(t, apitest.Request{Method: "GET", Path: "/readyz"})
	require.Equal(t, http.StatusOK, ready.Status, "Redis down is degraded, not unready: %s", ready.Body)
	require.JSONEq(t, `{"status":"degraded","degraded":["redis"]}`, ready.Body)
	// dependency_up is read from the probes at scrape time (cached 1 s).
	require.Eventually(t, func() bool { return a.gauge(t, "dependency_up", "dependency", "redis") == 0 },
		5*time.Second, 100*time.Millisecond, "dependency_up{dependency=redis} falls to 0")
	require.Equal(t, 1.0, a.gauge(t, "dependency_up", "dependency", "postgres"))
	require.Equal(t, http.StatusOK, a.do(t, apitest.Request{Method: "GET", Path: "/healthz"}).Status)

	agent := writer(t, "redis-down-agent")
	res := a.do(t, apitest.Request{Method: "POST", Path: testdomain.RouteOrders, Token: agent, Body: tdOrder(500, 0), Header: map[string]string{"Idempotency-Key": "redis-down-1"}})
	require.Equal(t, http.StatusCreated, res.Status, "creates stay correct without Redis: %s", res.Body)
	res = a.do(t, apitest.Request{Method: "GET", Path: configsPath + keyFlag, Token: admin(t)})
	require.Equal(t, http.StatusOK, res.Status, "config reads fall back to Postgres: %s", res.Body)

	a.rd.Up(t)
	require.Eventually(t, func() bool {
		res, err := a.send(apitest.Request{Method: "GET", Path: "/readyz"})
		return err == nil && res.Status == http.StatusOK && strings.Contains(res.Body, `"ok"`)
	}, 15*time.Second, 100*time.Millisecond)
}

// A Redis outage must not stop creates (Redis is never the final fact). With Redis
// refusing connections, and with Redis hanging (accepting TCP, answering
// nothing), 20 keys x 10 identical concurrent top-up creates on a
// one-connection Postgres pool are all answered, and each key creates
// exactly one order with its outbox event, while the configured limit
// still applies. The create once read that limit (a Redis GET, then a
// second pooled Postgres connection and a Redis SET) inside its
// transaction: on a pool of one a single create waited for ever, and
// concurrent creates on a larger pool waited on each other. So the pool
// is one connection: a create that needs a second one while it holds its
// transaction hangs here every time.
func TestRedisOutageKeepsCreating(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		outage func(*testinfra.Proxy)
	}{
		{"refused", (*testinfra.Proxy).Down},
		{"blackholed", (*testinfra.Proxy).Blackhole},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := startAPI(t, appOpts{proxied: true, tune: func(c *config) { c.DBMaxOpenConns = 1 }})
			res := a.do(t, apitest.Request{Method: "PUT", Path: configsPath + testdomain.KeyMaxAmount, Token: admin(t), Body: `{"value":5000}`})
			require.Equal(t, http.StatusOK, res.Status, res.Body)
			agent := writer(t, "redis-outage-"+tc.name)
			// create answers a create. Its wait is generous (a busy
			// machine answers in well under a second) and only there so a
			// create that hangs fails the test instead of stalling it.
			create := func(key, body string) (apitest.Response, error) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				return apitest.Send(ctx, a.url, apitest.Request{Method: "POST", Path: testdomain.RouteOrders, Token: agent, Body: body,
					Header: map[string]string{"Idempotency-Key": key}})
			}

			tc.outage(a.rd)
			t.Cleanup(func() { a.rd.Up(t) }) // before the app stops (cleanups run last first)

			const keys, copies = 20, 10
			type answer struct {
				key string
				res apitest.Response
				err error
			}
			answers := make(chan answer, keys*copies)
			var wg sync.WaitGroup
			for k := range keys {
				key := fmt.Sprintf("%s-create-%02d", tc.name, k)
				body := tdOrder(1000+k, 0)
				for range copies {
					wg.Go(func() {
						res, err := create(key, body)
						answers <- answer{key, res, err}
					})
				}
			}
			wg.Wait()
			close(answers)

			var all, unanswered []answer
			for an := range answers {
				if all = append(all, an); an.err != nil {
					unanswered = append(unanswered, an)
				}
			}
			if len(unanswered) > 0 {
				t.Fatalf("%d of %d creates unanswered while Redis is %s; the first: %s: %v\n%s",
					len(unanswered), len(all), tc.name, unanswered[0].key, unanswered[0].err, a.logs.String())
			}
			created := map[string]string{} // key -> order_id of its one first answer
			ids := map[string]map[string]bool{}
			for _, an := range all {
				checkContract(t, an.res)
				if an.res.Status == http.StatusConflict {
					// Only a first request still in flight may answer 409 (the guard).
					require.Equal(t, idemhttp.CodeInProgress, an.res.Error.Code, an.res.Body)
					require.True(t, an.res.Error.Retryable, an.res.Body)
					continue
				}
				require.Equal(t, http.StatusCreated, an.res.Status, "%s: Postgres is up, so the create succeeds: %s", an.key, an.res.Body)
				id := orderID(t, an.res.Body)
				if ids[an.key] == nil {
					ids[an.key] = map[string]bool{}
				}
				ids[an.key][id] = true
				if an.res.Header.Get(idemhttp.HeaderReplayed) != "true" {
					require.NotContains(t, created, an.key, "one first answer per key, the others replay")
					created[an.key] = id
				}
			}
			require.Len(t, created, keys, "every key created its order")
			for key, id := range created {
				require.Equal(t, map[string]bool{id: true}, ids[key], "%s: every replay names the one order", key)
			}

			var orders []struct {
				ID     string `bun:"id"`
				Key    string `bun:"idem_request_id"`
				Events int    `bun:"events"`
			}
			require.NoError(t, a.db.Bun.NewRaw(`SELECT o.id, o.idem_request_id,
				(SELECT count(*) FROM tb_outbox_event e WHERE e.event_type = ? AND e.aggregate_id = o.id) AS events
				FROM td_order o WHERE o.owner = ? AND o.idem_request_id LIKE ?`,
				testdomain.EventCreated, "redis-outage-"+tc.name, tc.name+"-create-%").Scan(t.Context(), &orders))
			require.Len(t, orders, keys, "exactly one order per key")
			for _, o := range orders {
				require.Equal(t, created[o.Key], o.ID, "%s: the answered order is the stored one", o.Key)
				require.Equal(t, 1, o.Events, "%s: the order has its %s event", o.Key, testdomain.EventCreated)
			}

			// The limit still applies: read from Postgres behind the outage.
			over, err := create(tc.name+"-over", tdOrder(5001, 0))
			require.NoError(t, err, "a create is answered\n%s", a.logs.String())
			checkContract(t, over)
			require.Equal(t, http.StatusUnprocessableEntity, over.Status, over.Body)
			require.Equal(t, testdomain.CodeAmountInvalid, over.Error.Code, over.Body)
			ready := a.do(t, apitest.Request{Method: "GET", Path: "/readyz"})
			require.Equal(t, http.StatusOK, ready.Status, ready.Body)
			require.JSONEq(t, `{"status":"degraded","degraded":["redis"]}`, ready.Body)
		})
	}
}

// gauge returns the value of a gauge with the given label, -1 if absent.
func (a *apiApp) gauge(t *testing.T, name, label, value string) float64 {
	t.Helper()
	return a.sample(t, name, label, value, -1)
}
