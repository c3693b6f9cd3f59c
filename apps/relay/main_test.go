package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
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
		return map[string]string{"DATABASE_URL": "postgres://u:hunter2@db/x", "RELAY_LOOPS": "0"}[k]
	}, &out, &errOut)
	require.Equal(t, exitUsage, code)
	for _, want := range []string{"REDIS_URL", "RELAY_LOOPS"} {
		require.Contains(t, errOut.String(), want)
	}
	require.NotContains(t, errOut.String(), "hunter2", "secrets are never printed")
}

func TestHelp(t *testing.T) {
	t.Parallel()

	var out bytes.Buffer
	require.Equal(t, exitOK, run(t.Context(), []string{"-h"}, func(string) string { return "" }, &out, &out))
	for _, want := range []string{"DATABASE_URL", "ADMIN_ADDR", "outbox replay"} {
		require.True(t, strings.Contains(out.String(), want), "help must mention %s", want)
	}
}
