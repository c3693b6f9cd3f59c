package apiserver_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apiserver"
	"github.com/july/template/adapters/http/apitest"
)

// Requests are counted and timed by the echo route template, method and
// status: never the raw path, so ids in paths do not create series.
func TestRequestMetricsUseRouteTemplates(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	s, err := apiserver.New(apiserver.Params{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), JWTSecret: secret, Metrics: reg})
	require.NoError(t, err)
	s.API.GET("/things/:id", func(c echo.Context) error {
		if c.Param("id") == "missing" {
			return echo.NewHTTPError(http.StatusNotFound)
		}
		return c.String(http.StatusOK, "ok")
	})
	srv := httptest.NewServer(s.Echo)
	t.Cleanup(srv.Close)
	tok := apitest.Token(t, secret, "u-1")
	for _, id := range []string{"a1", "b2", "missing"} {
		apitest.Do(t, srv.URL, apitest.Request{Method: "GET", Path: apiserver.Prefix + "/things/" + id, Token: tok})
	}
	apitest.Do(t, srv.URL, apitest.Request{Method: "GET", Path: "/no/such/secret-path"})
	apitest.Do(t, srv.URL, apitest.Request{Method: "BREW", Path: "/healthz"})

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP http_requests_total HTTP requests served, by echo route template (never the raw path), method and status code.
# TYPE http_requests_total counter
http_requests_total{method="GET",route="/api/v1/things/:id",status="200"} 2
http_requests_total{method="GET",route="/api/v1/things/:id",status="404"} 1
http_requests_total{method="GET",route="unmatched",status="404"} 1
http_requests_total{method="OTHER",route="/healthz",status="405"} 1
`), "http_requests_total"))
	n, err := testutil.GatherAndCount(reg, "http_request_duration_seconds")
	require.NoError(t, err)
	require.Equal(t, 4, n, "one latency histogram per route, method and status class: %d", n)
	admin := httptest.NewServer(s.Admin)
	t.Cleanup(admin.Close)
	body := apitest.Do(t, admin.URL, apitest.Request{Method: "GET", Path: "/metrics"}).Body
	require.Contains(t, body, "http_requests_total{", "the admin port serves the registry")
	require.NotContains(t, body, "secret-path", "raw paths never become labels")
	require.NotContains(t, body, "a1")
}
