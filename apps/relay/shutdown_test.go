package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/july/template/contracttests/testinfra"
)

// Item 3 (relay): on stop the admin /readyz fails for the drain delay while
// the admin server (and the relay behind it) keeps serving, then stops.
func TestAdminDrainsOnStop(t *testing.T) {
	t.Parallel()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: migrateDomains})
	r := testinfra.NewRedis(t)
	cfg := testConfig()
	cfg.DatabaseURL, cfg.RedisURL = db.URL, r.URL
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.Queue = r.Prefix + "q"
	cfg.DrainDelay = time.Second
	var admin adminServer
	app := fx.New(options(cfg, slog.New(slog.DiscardHandler)), fx.Populate(&admin))
	require.NoError(t, app.Err())
	require.NoError(t, app.Start(t.Context()))
	url := "http://" + admin.Addr().String()
	get := func(path string) (int, string) {
		res, err := http.Get(url + path)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	require.Eventually(t, func() bool { s, _ := get("/readyz"); return s == http.StatusOK }, 5*time.Second, 50*time.Millisecond)

	stopAt := time.Now()
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stopped <- app.Stop(ctx)
	}()
	require.Eventually(t, func() bool {
		s, body := get("/readyz")
		var env struct{ Error struct{ Code string } }
		_ = json.Unmarshal([]byte(body), &env)
		return s == http.StatusServiceUnavailable && env.Error.Code == "SHUTTING_DOWN"
	}, time.Second, 20*time.Millisecond, "readiness fails at once on stop")
	s, _ := get("/healthz")
	require.Equal(t, http.StatusOK, s, "still serving during the drain")
	require.NoError(t, <-stopped)
	require.GreaterOrEqual(t, time.Since(stopAt), time.Second, "stop waited for the drain delay")
}
