package envconf_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/internal/envconf"
)

func TestReader(t *testing.T) {
	t.Parallel()

	env := map[string]string{
		"DATABASE_URL": "postgres://u:topsecret@db:5432/app",
		"BAD_URL":      "mysql://u:topsecret@db/app",
		"N":            "7",
		"BAD_N":        "seven",
		"D":            "250ms",
		"BAD_D":        "2h",
		"ADDR":         ":9090",
		"LOG_LEVEL":    "WARN",
	}
	r := envconf.New(func(k string) string { return env[k] })
	require.Equal(t, env["DATABASE_URL"], r.URL("DATABASE_URL", "postgres", "postgresql"))
	require.Equal(t, 7, r.Int("N", 1, 1, 10))
	require.Equal(t, 250*time.Millisecond, r.Duration("D", time.Second, time.Millisecond, time.Minute))
	require.Equal(t, ":9090", r.Addr("ADDR", ":1"))
	require.Equal(t, slog.LevelWarn, r.LogLevel("LOG_LEVEL"))
	require.Equal(t, 3, r.Int("UNSET", 3, 1, 10))
	require.NoError(t, r.Err())

	r.URL("BAD_URL", "postgres")
	r.Int("BAD_N", 1, 1, 10)
	r.Duration("BAD_D", time.Second, time.Millisecond, time.Minute)
	r.Required("MISSING", "something")
	err := r.Err()
	require.Error(t, err)
	for _, name := range []string{"BAD_URL", "BAD_N", "BAD_D", "MISSING"} {
		require.Contains(t, err.Error(), name, "the error must name the variable")
	}
	require.NotContains(t, err.Error(), "topsecret", "a URL's password must never be echoed")
}
