package testinfra

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// The version matrix relies on this: a test process pointed at a server of
// another version, or in another time zone, fails at once.
func TestExpectServerRefusesAnotherServer(t *testing.T) {
	t.Parallel()

	url := resolvePostgres(t)
	db, err := sql.Open("pgx", url)
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	var num int
	var tz string
	require.NoError(t, db.QueryRowContext(context.Background(), `SELECT current_setting('server_version_num')::int, current_setting('TimeZone')`).Scan(&num, &tz))
	major := fmt.Sprint(num / 10000)

	require.NoError(t, expectServer(url, "", ""))
	require.NoError(t, expectServer(url, major, tz))
	require.ErrorContains(t, expectServer(url, "9", ""), "TEST_POSTGRES_VERSION=9 but the server")
	require.ErrorContains(t, expectServer(url, major, "Mars/Olympus_Mons"), "TEST_POSTGRES_TIMEZONE=Mars/Olympus_Mons but the server")
}
