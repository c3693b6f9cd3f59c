package main

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// REGRESSION: the admin server (health and /metrics) listened on
// every interface by default (":9090"). Unset, ADMIN_ADDR is loopback; a
// deployment that must be scraped names its address (the pod IP in
// deploy/k8s).
func TestAdminAddrDefaultsToLoopback(t *testing.T) {
	t.Parallel()
	host, port, err := net.SplitHostPort(testConfig().AdminAddr)
	require.NoError(t, err)
	require.Equal(t, "9090", port)
	ip := net.ParseIP(host)
	require.NotNil(t, ip, "ADMIN_ADDR's default names an address, not every interface: %q", host)
	require.True(t, ip.IsLoopback(), "ADMIN_ADDR's default is loopback, got %q", host)

	var out bytes.Buffer
	require.Equal(t, exitOK, run(t.Context(), []string{"-h"}, func(string) string { return "" }, &out, &out))
	require.Contains(t, out.String(), "else 127.0.0.1:9090", "help states the default")
}

// With POD_IP (Kubernetes downward API) the default binds the pod IP.
func TestAdminAddrDefaultsToThePodIP(t *testing.T) {
	t.Parallel()
	for ip, want := range map[string]string{"10.1.2.3": "10.1.2.3:9090", "fd00::7": "[fd00::7]:9090"} {
		c, err := loadConfig(func(k string) string {
			return map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres", "REDIS_URL": "redis://127.0.0.1:6379/0", "POD_IP": ip}[k]
		})
		require.NoError(t, err)
		require.Equal(t, want, c.AdminAddr)
	}
	_, err := loadConfig(func(k string) string {
		return map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres", "REDIS_URL": "redis://127.0.0.1:6379/0", "POD_IP": "$(POD_IP)"}[k]
	})
	require.ErrorContains(t, err, "POD_IP")
}

// ADMIN_PPROF=true adds Go's profiles to the admin listener; off, there
// are none.
func TestAdminPprofOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{false, true} {
		srv := newAdmin(config{AdminAddr: "127.0.0.1:0", AdminPprof: on}, nil, http.NotFoundHandler(), slog.New(slog.DiscardHandler))
		require.NoError(t, srv.Start(t.Context()))
		res, err := http.Get("http://" + srv.Addr().String() + "/debug/pprof/goroutine?debug=1")
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		require.NoError(t, srv.Stop(t.Context()))
		if on {
			require.Equal(t, http.StatusOK, res.StatusCode, string(body))
			require.Contains(t, string(body), "goroutine profile:")
		} else {
			require.Equal(t, http.StatusNotFound, res.StatusCode)
		}
	}
}
