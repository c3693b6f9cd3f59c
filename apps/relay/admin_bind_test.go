package main

import (
	"bytes"
	"net"
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
