//go:build pooler

package main

// migrate behind PgBouncer in transaction mode (make test-pooler).

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/contracttests/testinfra"
)

// TestPoolerMigrate: status, check and verify run through the pooler; up
// and down run on DATABASE_DIRECT_URL, and refuse a URL that reaches a
// pooler (DATABASE_URL without DATABASE_DIRECT_URL, or a
// DATABASE_DIRECT_URL that is the pooler) before they take the lock,
// naming DATABASE_DIRECT_URL: no advisory lock is left on a server
// connection the pooler lends to others.
func TestPoolerMigrate(t *testing.T) {
	db := testinfra.NewDB(t, testinfra.DBOpts{})
	pooled := testinfra.PoolerURL(t, db.URL)
	sets := migrationSets()
	cli := func(env map[string]string, args ...string) result {
		var out, errb bytes.Buffer
		code := runWith(context.Background(), args, func(k string) string { return env[k] }, &out, &errb, sets, backfills())
		return result{code, out.String(), errb.String()}
	}
	locks := func() int {
		var n int
		require.NoError(t, db.Bun.QueryRowContext(t.Context(),
			`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = ?
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, release.LockKey).Scan(&n))
		return n
	}

	onlyPooled := map[string]string{"DATABASE_URL": pooled}
	r := cli(onlyPooled, "check")
	require.Equal(t, exitOK, r.code, "rule: check runs through the pooler: %s%s", r.stdout, r.stderr)
	for _, cmd := range [][]string{{"up"}, {"down", "--to", "0"}} {
		r = cli(onlyPooled, cmd...)
		require.Equal(t, exitUsage, r.code, "rule: %s refuses a pooler: %s%s", cmd[0], r.stdout, r.stderr)
		require.Contains(t, r.stderr, "DATABASE_URL reaches Postgres through a connection pooler")
		require.Contains(t, r.stderr, "set DATABASE_DIRECT_URL to a direct connection")
		require.Zero(t, locks(), "rule: no lock taken")
	}
	r = cli(map[string]string{"DATABASE_URL": pooled, "DATABASE_DIRECT_URL": pooled}, "up")
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "DATABASE_DIRECT_URL reaches Postgres through a connection pooler")

	withDirect := map[string]string{"DATABASE_URL": pooled, "DATABASE_DIRECT_URL": db.URL}
	for _, cmd := range []string{"check", "up", "verify", "status"} {
		r = cli(withDirect, cmd)
		require.Equal(t, exitOK, r.code, "rule: migrate %s with the pooler and a direct URL: %s%s", cmd, r.stdout, r.stderr)
	}
	require.Contains(t, cli(withDirect, "status").stdout, "applied ")
	require.NotContains(t, cli(withDirect, "status").stdout, "pending ")
	require.Zero(t, locks(), "rule: the lock was released")
}
