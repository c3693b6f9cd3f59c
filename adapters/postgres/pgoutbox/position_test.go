package pgoutbox_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/internal/pgtopo"
)

// Position is what relay.History compares: it moves on with writes, a
// role without privileges may read it, and a promotion (as a restore does)
// starts a new timeline of the same cluster.
func TestPositionMovesOnAndChangesWithPromotion(t *testing.T) {
	t.Parallel()
	pair := pgtopo.Start(t)
	super, err := postgres.Open(t.Context(), postgres.Config{URL: "postgres://postgres@" + pair.Primary + "/postgres?sslmode=disable"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = super.Close() })
	_, err = super.ExecContext(t.Context(), `CREATE ROLE t_relay LOGIN NOSUPERUSER; CREATE TABLE t_pos (n int); GRANT ALL ON t_pos TO t_relay`)
	require.NoError(t, err)

	db, err := postgres.Open(t.Context(), postgres.Config{URL: "postgres://t_relay@" + pair.Primary + "," + pair.Standby +
		"/postgres?sslmode=disable&target_session_attrs=read-write"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	store, err := pgoutbox.NewStore(db, pgoutbox.Config{})
	require.NoError(t, err)

	p0, err := store.Position(t.Context())
	require.NoError(t, err, "a role without privileges reads the position")
	require.NotEmpty(t, p0.System)
	require.Positive(t, p0.Timeline)
	_, err = db.ExecContext(t.Context(), `INSERT INTO t_pos VALUES (1)`)
	require.NoError(t, err)
	p1, err := store.Position(t.Context())
	require.NoError(t, err)
	require.True(t, p1.After(p0), "a write carries the history on: %+v then %+v", p0, p1)
	require.Greater(t, p1.LSN, p0.LSN)

	pair.CaughtUp(t)
	pair.Failover(t)
	// The promoted standby accepts writes already; the pool may first hand
	// out connections to the dead primary, each failing once.
	p2, err := store.Position(t.Context())
	for i := 0; err != nil && i < 20; i++ {
		p2, err = store.Position(t.Context())
	}
	require.NoError(t, err)
	require.Equal(t, p1.System, p2.System, "a standby is the same cluster")
	require.Equal(t, p1.Timeline+1, p2.Timeline, "a promotion starts a timeline")
	require.False(t, p2.After(p1), "after a promotion the queue's history is not the database's")
}
