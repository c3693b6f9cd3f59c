// examples: delete this file (it tests through the examples' routes; make remove-examples)

package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
)

// Item 2: Postgres refusing connections answers 503 DEPENDENCY_UNAVAILABLE
// (retryable, Retry-After, the request id) on every route that needs it,
// including a domain handler returning RunInTx's raw error, and the API
// recovers by itself when Postgres is back.
func TestPostgresOutage(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{proxied: true})
	agent := token(t, "outage-agent", "agent")
	order := `{"amount_cents":1000,"channel":"wechat"}`
	res := a.do(t, apitest.Request{Method: "POST", Path: "/api/v1/topups", Token: agent, Body: order, Header: map[string]string{"Idempotency-Key": "outage-topup-0"}})
	require.Equal(t, http.StatusCreated, res.Status, res.Body)
	var o struct {
		TopupID string `json:"topup_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Body), &o))

	a.pg.Down()
	calls := []apitest.Request{
		{Method: "POST", Path: "/api/v1/topups", Token: agent, Body: order, Header: map[string]string{"Idempotency-Key": "outage-topup-1", "X-Request-ID": "outage-topup-1"}},
		{Method: "GET", Path: "/api/v1/topups/" + o.TopupID, Token: agent, Header: map[string]string{"X-Request-ID": "outage-read-0001"}},
		{Method: "GET", Path: "/api/v1/wallets/me", Token: agent, Header: map[string]string{"X-Request-ID": "outage-read-0002"}},
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

	agent := token(t, "redis-down-agent", "agent")
	res := a.do(t, apitest.Request{Method: "POST", Path: "/api/v1/topups", Token: agent, Body: `{"amount_cents":500,"channel":"alipay"}`, Header: map[string]string{"Idempotency-Key": "redis-down-1"}})
	require.Equal(t, http.StatusCreated, res.Status, "creates stay correct without Redis: %s", res.Body)
	res = a.do(t, apitest.Request{Method: "GET", Path: configsPath + keyFlag, Token: admin(t)})
	require.Equal(t, http.StatusOK, res.Status, "config reads fall back to Postgres: %s", res.Body)

	a.rd.Up(t)
	require.Eventually(t, func() bool {
		res, err := a.send(apitest.Request{Method: "GET", Path: "/readyz"})
		return err == nil && res.Status == http.StatusOK && strings.Contains(res.Body, `"ok"`)
	}, 15*time.Second, 100*time.Millisecond)
}

// gauge returns the value of a gauge with the given label, -1 if absent.
func (a *apiApp) gauge(t *testing.T, name, label, value string) float64 {
	t.Helper()
	return a.sample(t, name, label, value, -1)
}
