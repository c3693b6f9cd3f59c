package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/ports"
)

func testConfig() config {
	c, err := loadConfig(func(k string) string {
		return map[string]string{
			"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres",
			"REDIS_URL":    "redis://127.0.0.1:6379/0",
		}[k]
	})
	if err != nil {
		panic(err)
	}
	return c
}

func TestGraph(t *testing.T) {
	t.Parallel()

	require.NoError(t, fx.ValidateApp(options(testConfig(), slog.Default())))
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	t.Parallel()

	var out, errOut bytes.Buffer
	code := run(t.Context(), nil, func(k string) string {
		return map[string]string{"DATABASE_URL": "postgres://u:hunter2@db/x", "RELAY_LOOPS": "0", "WORKER_TASK_CHECK_INTERVAL": "1ms"}[k]
	}, &out, &errOut)
	require.Equal(t, exitUsage, code)
	for _, want := range []string{"REDIS_URL", "RELAY_LOOPS", "WORKER_TASK_CHECK_INTERVAL"} {
		require.Contains(t, errOut.String(), want)
	}
	require.NotContains(t, errOut.String(), "hunter2", "secrets are never printed")
}

func TestHelp(t *testing.T) {
	t.Parallel()

	var out bytes.Buffer
	require.Equal(t, exitOK, run(t.Context(), []string{"-h"}, func(string) string { return "" }, &out, &out))
	for _, want := range []string{"DATABASE_URL", "ADMIN_ADDR", "outbox replay", "outbox stuck", "WORKER_TASK_CHECK_INTERVAL"} {
		require.True(t, strings.Contains(out.String(), want), "help must mention %s", want)
	}
}

// TestConsumersCommitSynchronously guards the split between the relay's
// own pool (asynchronous commit is fine for at-least-once marks) and the
// *bun.DB hosted consumers write business facts through.
func TestConsumersCommitSynchronously(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{})
	cfg := testConfig()
	cfg.DatabaseURL = db.URL
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.WorkerEnabled = false
	var bdb *bun.DB
	app := fxtest.New(t, options(cfg, slog.New(slog.DiscardHandler)), fx.Populate(&bdb), fx.Invoke(fx.Annotate(func(ports.OutboxStore) {}, fx.ParamTags(postgres.RelayOutboxName))))
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	var mode string
	require.NoError(t, bdb.QueryRowContext(t.Context(), "SHOW synchronous_commit").Scan(&mode))
	require.Equal(t, "on", mode, "the consumers' pool must commit synchronously")
}

func TestVersion(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.Equal(t, exitOK, run(t.Context(), []string{"--version"}, func(string) string { return "" }, &out, &out))
	require.Regexp(t, `^relay \S+ \S+\nrevision `, out.String())
}

// A Postgres the relay cannot open is one JSON line that names the
// dependency, the variable and what to do, not fx's dependency chain.
func TestPostgresStartFailureIsASentence(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := run(t.Context(), nil, func(k string) string {
		return map[string]string{
			"DATABASE_URL": "postgres://relay:hunter2@127.0.0.1:1/app?sslmode=disable",
			"REDIS_URL":    testinfra.NewRedis(t).URL,
			"ADMIN_ADDR":   "127.0.0.1:0",
		}[k]
	}, &out, &errOut)
	require.Equal(t, exitError, code, errOut.String())
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	require.Len(t, lines, 1, "one line on stderr: %s", errOut.String())
	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &line), lines[0])
	require.Equal(t, "relay: did not start", line["msg"])
	require.Equal(t, "postgres", line["dependency"])
	require.Equal(t, "DATABASE_URL", line["variable"])
	require.Contains(t, line["error"], "connection was refused")
	require.Contains(t, line["hint"], "DATABASE_URL")
	for _, wiring := range []string{"could not build", "failed to build", "fx.", "reflect", "hunter2"} {
		require.NotContains(t, lines[0], wiring)
	}
}

// The operator commands say the same sentence when Postgres cannot be
// opened.
func TestOperatorPostgresFailureIsASentence(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"outbox", "list"}, func(k string) string {
		return map[string]string{"DATABASE_URL": "postgres://relay:hunter2@127.0.0.1:1/app?sslmode=disable"}[k]
	}, &out, &errOut)
	require.NotEqual(t, exitOK, code)
	require.Contains(t, errOut.String(), "connection was refused")
	require.Contains(t, errOut.String(), "fix: start Postgres")
	for _, wiring := range []string{"could not build", "failed to build", "reflect", "hunter2"} {
		require.NotContains(t, errOut.String(), wiring)
	}
}
