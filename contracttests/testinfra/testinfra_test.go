package testinfra_test

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/contracttests/testinfra"
)

func TestPostgresRoundTrip(t *testing.T) {
	t.Parallel()

	migrated := false
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: func(ctx context.Context, db *bun.DB) error {
		migrated = true
		_, err := db.ExecContext(ctx, "CREATE TABLE probe (id int PRIMARY KEY, note text NOT NULL)")
		return err
	}})
	require.True(t, migrated, "Migrate option must run")

	ctx := t.Context()
	_, err := db.Bun.ExecContext(ctx, "INSERT INTO probe VALUES (1, 'hello')")
	require.NoError(t, err)
	var note, current string
	require.NoError(t, db.Bun.QueryRowContext(ctx, "SELECT note, current_database() FROM probe WHERE id = 1").Scan(&note, &current))
	require.Equal(t, "hello", note)
	require.Equal(t, db.Name, current, "the pool must point at the test's own database")
}

func TestPostgresIsolation(t *testing.T) {
	t.Parallel()

	a := testinfra.NewDB(t, testinfra.DBOpts{})
	b := testinfra.NewDB(t, testinfra.DBOpts{})
	require.NotEqual(t, a.Name, b.Name)

	_, err := a.Bun.ExecContext(t.Context(), "CREATE TABLE only_in_a (id int)")
	require.NoError(t, err)
	var n int
	require.NoError(t, b.Bun.QueryRowContext(t.Context(), "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n))
	require.Zero(t, n, "a table created in one test database must not be visible in another")
}

func TestPostgresDropOnCleanup(t *testing.T) {
	t.Parallel()

	var name string
	t.Run("owner", func(t *testing.T) {
		name = testinfra.NewDB(t, testinfra.DBOpts{}).Name
	})
	probe := testinfra.NewDB(t, testinfra.DBOpts{})
	var n int
	require.NoError(t, probe.Bun.QueryRowContext(t.Context(), "SELECT count(*) FROM pg_database WHERE datname = ?", name).Scan(&n))
	require.Zero(t, n, "database %s must be dropped when its test ends", name)
}

func TestRedisRoundTripAndCleanup(t *testing.T) {
	t.Parallel()

	var prefix string
	outer := testinfra.NewRedis(t)
	t.Run("owner", func(t *testing.T) {
		r := testinfra.NewRedis(t)
		prefix = r.Prefix
		c := r.Client
		require.NoError(t, c.Do(t.Context(), c.B().Set().Key(r.Prefix+"k").Value("v").Build()).Error())
		got, err := c.Do(t.Context(), c.B().Get().Key(r.Prefix+"k").Build()).ToString()
		require.NoError(t, err)
		require.Equal(t, "v", got)
	})
	require.NotEqual(t, outer.Prefix, prefix)
	c := outer.Client
	n, err := c.Do(t.Context(), c.B().Exists().Key(prefix+"k").Build()).AsInt64()
	require.NoError(t, err)
	require.Zero(t, n, "keys under %s must be deleted at cleanup", prefix)
}

// Addr and DB are enough to build another client (a go-redis adapter's
// test does the same with goredis.Options) that sees the test's keys.
func TestRedisAddrAndDBReachTheSameKeys(t *testing.T) {
	t.Parallel()

	r := testinfra.NewRedis(t)
	require.NotEmpty(t, r.Addr)
	other, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{r.Addr}, SelectDB: r.DB,
		Username: r.Username, Password: r.Password, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(other.Close)
	require.NoError(t, other.Do(t.Context(), other.B().Set().Key(r.Prefix+"k").Value("v").Build()).Error())
	got, err := r.Client.Do(t.Context(), r.Client.B().Get().Key(r.Prefix+"k").Build()).ToString()
	require.NoError(t, err)
	require.Equal(t, "v", got)
}
