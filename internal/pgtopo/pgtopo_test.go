package pgtopo_test

import (
	"database/sql"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/july/template/internal/pgtopo"
)

// The multi-host URL reaches the primary, then, after the failover, the
// promoted standby with the row written before the switch.
func TestFailoverFollowsTheMultiHostURL(t *testing.T) {
	t.Parallel()
	p := pgtopo.Start(t)
	db, err := sql.Open("pgx", p.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.ExecContext(t.Context(), `CREATE TABLE t (n int)`)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), `INSERT INTO t VALUES (1)`)
	require.NoError(t, err)
	p.CaughtUp(t)
	p.Failover(t)
	require.Eventually(t, func() bool {
		_, err := db.ExecContext(t.Context(), `INSERT INTO t VALUES (2)`)
		return err == nil
	}, 30e9, 50e6, "writes reach the promoted standby")
	var n int
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM t`).Scan(&n))
	require.Equal(t, 2, n)
}
