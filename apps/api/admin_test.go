package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
)

// REGRESSION: /metrics was served unauthenticated on the public port,
// behind the same Service (and Ingress) as /api/v1. It is on the admin
// listener (ADMIN_ADDR) only, as the relay's; the public port keeps the
// probes, which load balancers and docs/openapi.yaml's clients use.
func TestMetricsOnlyOnTheAdminListener(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	require.NotEqual(t, a.url, a.adminURL)

	res := apitest.Do(t, a.url, apitest.Request{Method: http.MethodGet, Path: "/metrics"})
	require.Equal(t, http.StatusNotFound, res.Status, "the public port serves no /metrics: %s", res.Body)
	require.Equal(t, "ROUTE_NOT_FOUND", res.Error.Code)
	for _, p := range []string{"/healthz", "/readyz"} {
		require.Equal(t, http.StatusOK, a.do(t, apitest.Request{Method: http.MethodGet, Path: p}).Status, "public %s", p)
	}

	res = apitest.Do(t, a.adminURL, apitest.Request{Method: http.MethodGet, Path: "/metrics"})
	require.Equal(t, http.StatusOK, res.Status)
	for _, m := range []string{"# TYPE http_requests_total counter", `route="unmatched"`, "# TYPE dependency_up gauge", "config_update_rate_limited_total"} {
		require.Contains(t, res.Body, m, "the admin port serves the api's registry")
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		require.Equal(t, http.StatusOK, apitest.Do(t, a.adminURL, apitest.Request{Method: http.MethodGet, Path: p}).Status, "admin %s", p)
	}
	for _, p := range []string{"/api/v1/system-configs", "/openapi.yaml"} {
		require.Equal(t, http.StatusNotFound, apitest.Do(t, a.adminURL, apitest.Request{Method: http.MethodGet, Path: p, Token: admin(t)}).Status,
			"the admin port serves no API route: %s", p)
	}

	require.Equal(t, http.StatusNotFound, apitest.Do(t, a.adminURL, apitest.Request{Method: http.MethodGet, Path: "/debug/pprof/"}).Status,
		"no profiles unless ADMIN_PPROF=true")

	require.NoError(t, a.stop())
	_, err := apitest.Send(t.Context(), a.adminURL, apitest.Request{Method: http.MethodGet, Path: "/healthz"})
	require.Error(t, err, "the admin listener closes with the app")
}

// Unset, ADMIN_ADDR is loopback on 9091 (next to the relay's 9090 on one
// host); with POD_IP (Kubernetes downward API) it binds the pod IP, so
// Prometheus reaches it and nothing else listens.
func TestAdminAddrDefaults(t *testing.T) {
	t.Parallel()
	for ip, want := range map[string]string{"": "127.0.0.1:9091", "10.1.2.3": "10.1.2.3:9091", "fd00::7": "[fd00::7]:9091"} {
		e := validEnv()
		e["POD_IP"] = ip
		c, err := loadConfig(env(e))
		require.NoError(t, err)
		require.Equal(t, want, c.AdminAddr, "POD_IP=%q", ip)
	}
	e := validEnv()
	e["POD_IP"], e["ADMIN_ADDR"] = "10.1.2.3", ":9191"
	c, err := loadConfig(env(e))
	require.NoError(t, err)
	require.Equal(t, ":9191", c.AdminAddr, "ADMIN_ADDR wins")
}

// ADMIN_PPROF=true serves Go's profiles on the admin listener, never on
// the public port.
func TestPprofOnlyWhenAskedAndOnlyOnTheAdminListener(t *testing.T) {
	t.Parallel()
	c, err := loadConfig(env(validEnv()))
	require.NoError(t, err)
	require.False(t, c.AdminPprof, "off by default")
	e := validEnv()
	e["ADMIN_PPROF"] = "true"
	c, err = loadConfig(env(e))
	require.NoError(t, err)
	require.True(t, c.AdminPprof)

	a := startAPI(t, appOpts{tune: func(c *config) { c.AdminPprof = true }})
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/heap?debug=1", "/debug/pprof/cmdline"} {
		res := apitest.Do(t, a.adminURL, apitest.Request{Method: http.MethodGet, Path: p})
		require.Equal(t, http.StatusOK, res.Status, "admin %s: %s", p, res.Body)
	}
	require.Contains(t, apitest.Do(t, a.adminURL, apitest.Request{Method: http.MethodGet, Path: "/debug/pprof/goroutine?debug=1"}).Body, "goroutine profile:")
	require.Equal(t, http.StatusNotFound, apitest.Do(t, a.url, apitest.Request{Method: http.MethodGet, Path: "/debug/pprof/"}).Status, "never on the public port")
}
