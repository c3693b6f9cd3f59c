package accesslog_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/redaction"

	"github.com/july/template/contracttests/testinfra"
)

// TestRoutePolicyCoversQueryAndReferer: the query string and the Referer
// follow the route's policy, not the default one. An OAuth callback's
// ?code=&state= on a login route, and a payment route's undeclared
// parameters, are logged as shapes; declared ones stay.
func TestRoutePolicyCoversQueryAndReferer(t *testing.T) {
	t.Parallel()
	logs := &testinfra.LogBuffer{}
	log := newLogger(logs)
	mw := accesslog.New(accesslog.Config{Logger: log, Routes: map[string]accesslog.RoutePolicy{
		"/oauth/callback": {Policy: redaction.PolicyLogin},
		"/pay":            {Policy: redaction.PolicyPayment, Safe: []string{"order_id"}},
	}})
	e := httpx.NewServer(httpx.ServerConfig{Middleware: []echo.MiddlewareFunc{mw}}, log)
	e.GET("/oauth/callback", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	e.GET("/pay", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })

	for _, tc := range []struct{ target, referer, id string }{
		{"/oauth/callback?code=OAuthCode7788&state=StateXyz991", "https://sso.example/authorize?code=RefCode4455&state=RefState66", "r-login"},
		{"/pay?order_id=T-1001&dynamic_id=286612345678901234&qpay9=Secret8812", "https://shop.example/checkout?yzm=556677&order_id=T-1001", "r-pay"},
	} {
		r := httptest.NewRequest(http.MethodGet, tc.target, nil)
		r.Header.Set("Referer", tc.referer)
		r.Header.Set(httpx.HeaderRequestID, tc.id)
		e.ServeHTTP(httptest.NewRecorder(), r)
	}
	out := decoded(t, logs)
	for _, secret := range []string{"OAuthCode7788", "StateXyz991", "RefCode4455", "RefState66", "286612345678901234", "Secret8812", "556677"} {
		require.NotContains(t, out, secret)
	}
	var pay map[string]any
	for _, l := range logs.Lines(t) {
		if l["path"] == "/pay" {
			pay = l
		}
	}
	require.NotNil(t, pay)
	require.True(t, strings.HasPrefix(pay["query"].(string), "order_id=T-1001&"), pay["query"])
	require.Contains(t, pay["referer"], "order_id=T-1001")
	require.Contains(t, pay["query"], "qpay9=[REDACTED:string:10]")
}
