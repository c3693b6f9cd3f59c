package pgtopo_test

import (
	"database/sql"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/july/template/internal/pgtopo"
)

// waitLimit: generous, as the package's own (a busy CI machine).
const waitLimit = 2 * time.Minute

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
	deadline := time.Now().Add(waitLimit)
	for {
		_, err := db.ExecContext(t.Context(), `INSERT INTO t VALUES (2)`)
		if err == nil {
			break
		}
		if !time.Now().Before(deadline) {
			var port, dir string
			_ = db.QueryRowContext(t.Context(), `SELECT inet_server_port()::text, current_setting('data_directory')`).Scan(&port, &dir)
			t.Fatalf("writes did not reach the promoted standby (%s) in %s: %v; connected to port %s, %s", p.Standby, waitLimit, err, port, dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var n int
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM t`).Scan(&n))
	require.Equal(t, 2, n)
}
