package main

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
)

// Item 11: a PUT without version is unconditional, as documented: many at
// once all succeed (last writer wins) and each writes one version.
func TestConcurrentUnversionedPuts(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	adm := admin(t)
	const n = 16
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := a.send(apitest.Request{Method: "PUT", Path: configsPath + keyCount, Token: adm, Body: fmt.Sprintf(`{"value":%d}`, i%10+1)})
			if err == nil {
				statuses[i] = res.Status
			}
		})
	}
	wg.Wait()
	for i, s := range statuses {
		require.Equal(t, http.StatusOK, s, "unversioned PUT %d", i)
	}
	r, _ := a.row(t, keyCount)
	require.Equal(t, int64(n), r.Version, "each accepted PUT wrote one version")
	require.Len(t, a.audits(t, keyCount), n, "each accepted PUT was audited once")
}

// Item 12: a sensitive key's enum values are masked like its value: not in
// the view's constraints, the 422 reason, the audit reason or the access log.
func TestSensitiveEnumIsMasked(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	adm := admin(t)
	secrets := []string{"tier-alpha-9f3", "tier-omega-7c1"}
	get := a.do(t, apitest.Request{Method: "GET", Path: configsPath + keyTier, Token: adm})
	require.Equal(t, http.StatusOK, get.Status, get.Body)
	list := a.do(t, apitest.Request{Method: "GET", Path: "/api/v1/system-configs?module=test", Token: adm})
	bad := a.do(t, apitest.Request{Method: "PUT", Path: configsPath + keyTier, Token: adm, Body: `{"value":"tier-nope"}`})
	require.Equal(t, http.StatusUnprocessableEntity, bad.Status, bad.Body)
	ok := a.do(t, apitest.Request{Method: "PUT", Path: configsPath + keyTier, Token: adm, Body: `{"value":"tier-omega-7c1"}`})
	require.Equal(t, http.StatusOK, ok.Status, "a listed value is still accepted: %s", ok.Body)
	audits := a.audits(t, keyTier)
	require.Len(t, audits, 2)
	for _, s := range secrets {
		require.NotContains(t, get.Body, s, "view")
		require.NotContains(t, list.Body, s, "list")
		require.NotContains(t, bad.Body, s, "422 reason")
		require.NotContains(t, ok.Body, s, "200 view")
		for _, au := range audits {
			require.NotContains(t, fmt.Sprintf("%+v", au), s, "audit record")
		}
		require.NotContains(t, a.logs.String(), s, "access log")
	}
}

// Item 9: rejected updates are audited, but one principal's rejections are
// bounded per window: past the limit 429 with Retry-After, counted, the
// first 429 audited once; with Redis down the limit still holds.
func TestRejectedUpdatesAreRateLimited(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{proxied: true})
	flood := func(sub string) {
		t.Helper()
		tok := token(t, sub, "ops")
		for i := range 20 {
			res := a.do(t, apitest.Request{Method: "PUT", Path: configsPath + keyFlag, Token: tok, Body: `{"value":true}`})
			require.Equal(t, http.StatusForbidden, res.Status, "attempt %d: %s", i+1, res.Body)
		}
		for range 3 {
			res := a.do(t, apitest.Request{Method: "PUT", Path: configsPath + keyFlag, Token: tok, Body: `{"value":true}`})
			require.Equal(t, http.StatusTooManyRequests, res.Status, res.Body)
			require.Equal(t, "CONFIG_UPDATE_RATE_LIMITED", res.Error.Code)
			require.True(t, res.Error.Retryable)
			require.NotEmpty(t, res.Header.Get("Retry-After"))
		}
	}
	before := len(a.audits(t, keyFlag))
	flood("flooder-1")
	require.Equal(t, before+21, len(a.audits(t, keyFlag)), "20 rejections and the first 429 are audited, later 429s are not")
	require.Equal(t, 3.0, a.plainCounter(t, "config_update_rate_limited_total"))
	res := a.do(t, apitest.Request{Method: "PUT", Path: configsPath + keyFlag, Token: admin(t), Body: `{"value":true}`})
	require.Equal(t, http.StatusOK, res.Status, "another principal is not limited: %s", res.Body)

	a.rd.Down()
	flood("flooder-2") // the in-process fallback holds the limit
}

// plainCounter returns an unlabelled counter's value, 0 if absent.
func (a *apiApp) plainCounter(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := a.metrics.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
