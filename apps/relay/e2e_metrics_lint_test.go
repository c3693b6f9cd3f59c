package main_test

import (
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/http/apitest"
)

// Both binaries' real /metrics pass `promtool check metrics`, Prometheus'
// own lint of names, types, units and format (a gauge named like a
// counter or a histogram part fails it), with the relay's labelled
// families populated by deliveries and the api's by requests.
func TestE2EMetricsPassPromtool(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool is needed: Debian's prometheus package (make test installs it)")

	w := newWorld(t, "")
	w.startConsumer()
	relay := w.startRelay("relay-promtool")
	w.commitMany("promtool", 20, 5)
	w.waitCount(20, `SELECT count(*) FROM consumed`)
	// One row backing off after two failed attempts, so the per-retry
	// gauge has a sample (a family without samples is not exposed).
	require.NoError(t, w.db.Bun.RunInTx(t.Context(), nil, func(ctx context.Context, tx bun.Tx) error {
		ids, err := w.placeOrders(ctx, tx, "req-promtool-backoff", "corr-promtool-backoff", orderCreated{OrderID: "promtool-backoff", Amount: 1})
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE tb_outbox_event SET retry_count = 2, next_attempt_at = now() + interval '1 hour'
			WHERE event_id IN (?)`, bun.List(ids))
		return err
	}))
	eventually(t, "the relay exposes the backing-off row by retry count", func() (bool, string) {
		_, body := relay.get("/metrics")
		return strings.Contains(body, `{retry_count="2"} 1`), "no sample with retry_count=\"2\" yet"
	})

	secret := "relay-e2e-promtool-secret-0123456789abcdef-01"
	api, apiAdmin := startAPIBinAdmin(t, w, secret)
	token := apitest.Token(t, []byte(secret), "promtool-admin", "super_admin")
	for _, r := range []apitest.Request{
		{Method: http.MethodGet, Path: "/api/v1/system-configs", Token: token},
		{Method: http.MethodGet, Path: "/api/v1/system-configs"}, // 401
		{Method: http.MethodGet, Path: "/no-such-route"},
	} {
		_, err := apitest.Send(t.Context(), api, r)
		require.NoError(t, err)
	}
	res, err := apitest.Send(t.Context(), apiAdmin, apitest.Request{Method: http.MethodGet, Path: "/metrics"})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.Status, "api /metrics on ADMIN_ADDR")
	public, err := apitest.Send(t.Context(), api, apitest.Request{Method: http.MethodGet, Path: "/metrics"})
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, public.Status, "the api's public port serves no /metrics")
	code, relayBody := relay.get("/metrics")
	require.Equal(t, http.StatusOK, code, "relay /metrics")

	// Both negotiate OpenMetrics the same way.
	const openMetrics = "application/openmetrics-text; version=1.0.0"
	om, err := apitest.Send(t.Context(), apiAdmin, apitest.Request{Method: http.MethodGet, Path: "/metrics", Header: map[string]string{"Accept": openMetrics}})
	require.NoError(t, err)
	require.Contains(t, om.Header.Get("Content-Type"), "application/openmetrics-text", "the api serves OpenMetrics when asked")
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+relay.admin+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", openMetrics)
	rres, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = rres.Body.Close()
	require.Contains(t, rres.Header.Get("Content-Type"), "application/openmetrics-text", "the relay serves OpenMetrics when asked")

	for name, body := range map[string]string{"api": res.Body, "relay": relayBody} {
		require.Contains(t, body, "# TYPE ", "%s /metrics is an exposition", name)
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		require.NoError(t, err, "promtool check metrics on the %s's /metrics:\n%s", name, out.String())
		require.Empty(t, strings.TrimSpace(out.String()), "promtool check metrics on the %s's /metrics", name)
	}
}
