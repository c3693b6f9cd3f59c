package apiserver_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/apiserver"
	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/contracttests/testinfra"
)

var secret = []byte("apiserver-test-secret-0123456789abcdef")

func TestNewNeedsLoggerAndSecret(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	_, err := apiserver.New(apiserver.Params{JWTSecret: secret})
	require.ErrorContains(t, err, "Logger")
	_, err = apiserver.New(apiserver.Params{Logger: log, JWTSecret: []byte("short")})
	require.Error(t, err)
	route := accesslog.Route{Path: apiserver.Prefix + "/x"}
	_, err = apiserver.New(apiserver.Params{Logger: log, JWTSecret: secret, Routes: []accesslog.Route{route, route}})
	require.ErrorContains(t, err, "registered twice")
}

// The probes answer without an access line; the API group wants a token.
// /metrics is on the admin port only (REGRESSION: it was served on the
// public port, behind the same Service as /api/v1); the admin port answers
// the probes too, with the same drain.
func TestProbesAndAuthenticatedGroup(t *testing.T) {
	t.Parallel()
	logs := &testinfra.LogBuffer{}
	s, err := apiserver.New(apiserver.Params{Logger: slog.New(slog.NewJSONHandler(logs, nil)), JWTSecret: secret})
	require.NoError(t, err)
	s.API.GET("/me", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	srv := httptest.NewServer(s.Echo)
	t.Cleanup(srv.Close)
	admin := httptest.NewServer(s.Admin)
	t.Cleanup(admin.Close)

	for _, p := range []string{"/healthz", "/readyz"} {
		require.Equal(t, http.StatusOK, apitest.Do(t, srv.URL, apitest.Request{Method: "GET", Path: p}).Status, p)
		require.Equal(t, http.StatusOK, apitest.Do(t, admin.URL, apitest.Request{Method: "GET", Path: p}).Status, "admin "+p)
	}
	require.NotContains(t, logs.String(), `"msg":"access"`, "probes are not access-logged")
	res := apitest.Do(t, srv.URL, apitest.Request{Method: "GET", Path: "/metrics"})
	require.Equal(t, http.StatusNotFound, res.Status, "the public port serves no /metrics")
	require.Equal(t, "ROUTE_NOT_FOUND", res.Error.Code)
	res = apitest.Do(t, admin.URL, apitest.Request{Method: "GET", Path: "/metrics"})
	require.Equal(t, http.StatusOK, res.Status, "admin /metrics")
	require.Contains(t, res.Body, "# TYPE http_requests_total counter")
	require.Equal(t, http.StatusNotFound, apitest.Do(t, admin.URL, apitest.Request{Method: "GET", Path: apiserver.Prefix + "/me"}).Status,
		"the admin port serves no API route")

	res = apitest.Do(t, srv.URL, apitest.Request{Method: "GET", Path: apiserver.Prefix + "/me"})
	require.Equal(t, http.StatusUnauthorized, res.Status)
	require.NotEmpty(t, res.Error.Code)
	res = apitest.Do(t, srv.URL, apitest.Request{Method: "GET", Path: apiserver.Prefix + "/me", Token: apitest.Token(t, secret, "u-1")})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	require.Contains(t, logs.String(), `"msg":"access"`)
}

// Draining fails /readyz on both ports: the orchestrator may probe either.
func TestDrainFailsReadinessOnBothPorts(t *testing.T) {
	t.Parallel()
	s, err := apiserver.New(apiserver.Params{Logger: slog.New(slog.NewJSONHandler(&testinfra.LogBuffer{}, nil)), JWTSecret: secret})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Echo)
	t.Cleanup(srv.Close)
	admin := httptest.NewServer(s.Admin)
	t.Cleanup(admin.Close)
	s.Health.Drain()
	for _, u := range []string{srv.URL, admin.URL} {
		res := apitest.Do(t, u, apitest.Request{Method: "GET", Path: "/readyz"})
		require.Equal(t, http.StatusServiceUnavailable, res.Status, u)
		require.Equal(t, "SHUTTING_DOWN", res.Error.Code, u)
	}
}
