package accesslog_test

import (
	"errors"
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

// TestRoutePolicyCoversErrorsAndPanics: an error's cause and a panic's
// value are free text that may quote the request; on a default-deny route
// they are logged as their shape (length and, with a hash key, a keyed
// hash to match equal messages), on the others cleaned like a log line.
func TestRoutePolicyCoversErrorsAndPanics(t *testing.T) {
	t.Parallel()
	logs := &testinfra.LogBuffer{}
	log := newLogger(logs)
	mw := accesslog.New(accesslog.Config{Logger: log, Routes: map[string]accesslog.RoutePolicy{
		"/pay/fail":  {Policy: redaction.PolicyPayment, Safe: []string{"order_id"}},
		"/pay/panic": {Policy: redaction.PolicyPayment, Safe: []string{"order_id"}},
	}})
	e := httpx.NewServer(httpx.ServerConfig{Middleware: []echo.MiddlewareFunc{mw}}, log)
	const quoted = "charge refused: qpay9=Secret8812 for 13812345678"
	e.POST("/pay/fail", func(echo.Context) error { return httpx.Internal(errors.New(quoted)) })
	e.POST("/pay/panic", func(echo.Context) error { panic(quoted) })
	e.POST("/plain/fail", func(echo.Context) error {
		return httpx.Internal(errors.New("dial tcp 10.0.0.7:5432: connection refused"))
	})
	e.POST("/plain/panic", func(echo.Context) error {
		panic("bad header Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0MiJ9.c2lnbmF0dXJlc2VjcmV0")
	})
	for _, target := range []string{"/pay/fail", "/pay/panic", "/plain/fail", "/plain/panic"} {
		r := httptest.NewRequest(http.MethodPost, target, nil)
		r.Header.Set(httpx.HeaderRequestID, "r"+strings.ReplaceAll(target, "/", "-"))
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, r)
		require.Equal(t, http.StatusInternalServerError, rec.Code, target)
	}
	out := decoded(t, logs)
	for _, secret := range []string{"Secret8812", "13812345678", "charge refused", "c2lnbmF0dXJlc2VjcmV0"} {
		require.NotContains(t, out, secret)
	}
	require.Contains(t, line(t, logs, "request failed", "r-pay-fail")["error"], "[REDACTED:string:")
	require.Contains(t, line(t, logs, "panic recovered", "r-pay-panic")["panic"], "[REDACTED:string:")
	require.Equal(t, "dial tcp 10.0.0.7:5432: connection refused", line(t, logs, "request failed", "r-plain-fail")["error"],
		"a default route keeps a cause that holds no secret")
	require.Contains(t, line(t, logs, "panic recovered", "r-plain-panic")["panic"], "bad header")
}
