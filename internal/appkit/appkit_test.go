package appkit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/internal/appkit"
)

func TestNewLoggerRedacts(t *testing.T) {
	t.Parallel()

	var buf bytes.Buffer
	appkit.NewLogger(&buf, slog.LevelInfo).Info("login", "password", "hunter2", "user", "alice")
	require.NotContains(t, buf.String(), "hunter2")
	require.Contains(t, buf.String(), `"user":"alice"`)
}

func TestServeLifecycle(t *testing.T) {
	t.Parallel()

	var events []string
	ctx, cancel := context.WithCancel(t.Context())
	opts := fx.Options(fx.NopLogger, fx.Invoke(func(lc fx.Lifecycle) {
		lc.Append(fx.Hook{
			OnStart: func(context.Context) error { events = append(events, "start"); return nil },
			OnStop:  func(context.Context) error { events = append(events, "stop"); return nil },
		})
	}))
	err := appkit.Serve(ctx, opts, time.Second,
		func() { events = append(events, "started"); cancel() },
		func() { events = append(events, "stopping") })
	require.NoError(t, err)
	require.Equal(t, []string{"start", "started", "stopping", "stop"}, events)
}

func TestServeReportsStartFailure(t *testing.T) {
	t.Parallel()

	boom := errors.New("port taken")
	opts := fx.Options(fx.NopLogger, fx.Invoke(func(lc fx.Lifecycle) {
		lc.Append(fx.Hook{OnStart: func(context.Context) error { return boom }})
	}))
	err := appkit.Serve(t.Context(), opts, time.Second, func() { t.Error("started must not run") }, func() {})
	require.ErrorIs(t, err, boom)
}

func TestNewLoggerAddsContextIDsOnce(t *testing.T) {
	t.Parallel()

	var buf bytes.Buffer
	log := appkit.NewLogger(&buf, slog.LevelInfo, httpx.LogIDs)
	ctx := httpx.WithRequestID(t.Context(), "req-12345678")
	log.InfoContext(ctx, "plain")
	httpx.Logger(ctx, log).InfoContext(ctx, "already tagged")
	log.Info("no context ids")

	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	require.Len(t, lines, 3)
	require.Equal(t, 1, bytes.Count(lines[0], []byte(`"request_id":"req-12345678"`)), "%s", lines[0])
	require.Equal(t, 1, bytes.Count(lines[1], []byte(`"request_id"`)), "never twice: %s", lines[1])
	require.NotContains(t, string(lines[2]), "request_id")
}

func TestPrintVersion(t *testing.T) {
	t.Parallel()
	require.True(t, appkit.IsVersionFlag([]string{"--version"}))
	require.False(t, appkit.IsVersionFlag([]string{"--version", "x"}))
	var buf bytes.Buffer
	appkit.PrintVersion(&buf, "api")
	require.Regexp(t, `^api \S+ \S+\nrevision .+\ntemplate .+\ngo1\.`, buf.String())
}

// A host in China time (TZ=Asia/Shanghai) logs the same instant as a UTC
// host, in UTC, like the API and the events.
func TestNewLoggerWritesUTCTimes(t *testing.T) {
	t.Parallel()

	var buf bytes.Buffer
	log := appkit.NewLogger(&buf, slog.LevelInfo)
	shanghai := time.Date(2030, 1, 1, 8, 0, 0, 0, time.FixedZone("CST", 8*3600))
	require.NoError(t, log.Handler().Handle(context.Background(), slog.NewRecord(shanghai, slog.LevelInfo, "tick", 0)))
	require.Contains(t, buf.String(), `"time":"2030-01-01T00:00:00Z"`)
}

type depErr struct{}

func (depErr) Error() string {
	return "cannot open postgres at db:5432 (DATABASE_URL): the connection was refused"
}
func (depErr) Dependency() string { return "postgres" }
func (depErr) Variable() string   { return "DATABASE_URL" }
func (depErr) Fix() string {
	return "start Postgres there, or set DATABASE_URL to the address it listens on"
}

// A DependencyError anywhere in the chain is the whole line: dependency,
// variable, its own sentence and its fix, not what wrapped it.
func TestLogStartFailureOfADependency(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := fmt.Errorf("%w: build app: could not build arguments for function main.newThing: %w", appkit.ErrNotStarted, depErr{})
	appkit.LogStartFailure(&out, "api: did not start", err, "HTTP_ADDR")
	var line map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &line), out.String())
	require.Equal(t, "postgres", line["dependency"])
	require.Equal(t, "DATABASE_URL", line["variable"])
	require.Equal(t, depErr{}.Error(), line["error"])
	require.Equal(t, depErr{}.Fix(), line["hint"])
	require.NotContains(t, out.String(), "could not build")
}
