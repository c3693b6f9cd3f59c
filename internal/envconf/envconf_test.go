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

// A failover DATABASE_URL names several hosts and a Sentinel or Cluster
// REDIS_URL several nodes: net/url refuses both, the readers do not.
func TestTopologyURLs(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"PG1": "postgres://u:topsecret@db:5432/app",
		"PG2": "postgres://u:topsecret@db1:5432,db2:5433/app?target_session_attrs=read-write",
		"R1":  "redis://:topsecret@cache:6379/0",
		"R2":  "redis-sentinel://:topsecret@s1:26379,s2:26379/0?master=main",
		"R3":  "redis-cluster://:topsecret@n1:7000,n2:7001",
	}
	r := envconf.New(func(k string) string { return good[k] })
	for _, k := range []string{"PG1", "PG2"} {
		require.Equal(t, good[k], r.PostgresURL(k))
	}
	for _, k := range []string{"R1", "R2", "R3"} {
		require.Equal(t, good[k], r.RedisURL(k))
	}
	require.NoError(t, r.Err())

	bad := map[string]string{
		"PG_SCHEME": "mysql://u:topsecret@db/app",
		"PG_HOST":   "postgres://u:topsecret@db1:5432,:/app",
		"PG_PORT":   "postgres://u:topsecret@db1:54x2/app",
		"R_MASTER":  "redis-sentinel://:topsecret@s1:26379",
		"R_MULTI":   "redis://:topsecret@n1:1,n2:2",
	}
	r = envconf.New(func(k string) string { return bad[k] })
	for _, k := range []string{"PG_SCHEME", "PG_HOST", "PG_PORT"} {
		r.PostgresURL(k)
	}
	r.RedisURL("R_MASTER")
	r.RedisURL("R_MULTI")
	err := r.Err()
	require.Error(t, err)
	for k := range bad {
		require.Contains(t, err.Error(), k+":", "the error must name %s", k)
	}
	require.NotContains(t, err.Error(), "topsecret")
}

// An optional postgres URL (DATABASE_DIRECT_URL) is its default when unset
// and checked like a required one when set.
func TestOptionalPostgresURL(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SET": "postgres://u:topsecret@db:5432/app", "BAD": "mysql://u:topsecret@db/app"}
	r := envconf.New(func(k string) string { return env[k] })
	require.Equal(t, "fallback", r.OptionalPostgresURL("UNSET", "fallback"))
	require.Equal(t, env["SET"], r.OptionalPostgresURL("SET", "fallback"))
	require.NoError(t, r.Err())
	r.OptionalPostgresURL("BAD", "")
	require.ErrorContains(t, r.Err(), "BAD: is not a valid postgres URL")
	require.NotContains(t, r.Err().Error(), "topsecret")
}
