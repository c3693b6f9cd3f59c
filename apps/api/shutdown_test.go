package main

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/apps/internal/testdomain"
)

// Item 3: on stop /readyz fails for the drain delay while new and
// in-flight requests are still served; then the listener closes and the
// in-flight request still completes within SHUTDOWN_TIMEOUT.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{tune: func(c *config) { c.DrainDelay = 1500 * time.Millisecond }})
	agent := writer(t, "drain-agent")
	id := a.tdCreate(t, agent, "drain-before-1", 100)

	// An in-flight create whose body arrives slowly, across the whole drain.
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(t.Context(), "POST", a.url+testdomain.RouteOrders, pr)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+agent)
	req.Header.Set("Idempotency-Key", "drain-inflight-1")
	type result struct {
		status int
		err    error
	}
	inflight := make(chan result, 1)
	go func() {
		res, err := testClient.Do(req)
		if err != nil {
			inflight <- result{err: err}
			return
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		inflight <- result{status: res.StatusCode}
	}()
	_, err = pw.Write([]byte(`{"amount":1000,`))
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // the request is in the handler, reading

	stopped := make(chan error, 1)
	stopAt := time.Now()
	go func() { stopped <- a.stop() }()

	require.Eventually(t, func() bool {
		res, err := a.send(apitest.Request{Method: "GET", Path: "/readyz"})
		return err == nil && res.Status == http.StatusServiceUnavailable && res.Error.Code == "SHUTTING_DOWN"
	}, time.Second, 20*time.Millisecond, "readiness fails at once")
	ready := a.do(t, apitest.Request{Method: "GET", Path: "/readyz"})
	require.Equal(t, http.StatusServiceUnavailable, ready.Status)
	res := a.do(t, apitest.Request{Method: "GET", Path: testdomain.RouteOrders + "/" + id, Token: agent})
	require.Equal(t, http.StatusOK, res.Status, "new requests are still served during the drain: %s", res.Body)
	require.Equal(t, http.StatusOK, a.do(t, apitest.Request{Method: "GET", Path: "/healthz"}).Status)

	time.Sleep(1700*time.Millisecond - time.Since(stopAt)) // past the drain delay: the listener is closed
	_, err = http.Get(a.url + "/healthz")
	require.Error(t, err, "no new connections after the drain delay")

	_, err = pw.Write([]byte(`"note":"drain"}`))
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	select {
	case r := <-inflight:
		require.NoError(t, r.err)
		require.Equal(t, http.StatusCreated, r.status, "the in-flight request completes")
	case <-time.After(5 * time.Second):
		t.Fatal("in-flight request did not complete")
	}
	require.NoError(t, <-stopped)
	require.GreaterOrEqual(t, time.Since(stopAt), 1500*time.Millisecond, "stop waited for the drain delay")
}
