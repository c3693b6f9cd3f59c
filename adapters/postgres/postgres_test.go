package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/contracttests/testinfra"
)

func TestOpenAndHealth(t *testing.T) {
	t.Parallel()

	tdb := testinfra.NewDB(t, testinfra.DBOpts{})
	db, err := postgres.Open(t.Context(), postgres.Config{URL: tdb.URL})
	require.NoError(t, err)
	require.Equal(t, postgres.DefaultMaxOpenConns, db.Stats().MaxOpenConnections)
	require.NoError(t, postgres.Health(t.Context(), db))
	require.NoError(t, db.Close())
	require.Error(t, postgres.Health(t.Context(), db), "a closed pool is unhealthy")

	_, err = postgres.Open(t.Context(), postgres.Config{})
	require.ErrorIs(t, err, postgres.ErrNoURL)
	_, err = postgres.Open(t.Context(), postgres.Config{URL: "postgres://u:hunter2@127.0.0.1:1/x?sslmode=disable"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2", "errors must not leak the password")
}

func TestModuleProvidesAndCloses(t *testing.T) {
	t.Parallel()

	tdb := testinfra.NewDB(t, testinfra.DBOpts{})
	var db *bun.DB
	app := fxtest.New(t, postgres.Module, fx.Supply(postgres.Config{URL: tdb.URL}), fx.Populate(&db))
	app.RequireStart()
	require.NoError(t, postgres.Health(t.Context(), db))
	app.RequireStop()
	require.Error(t, db.Ping(), "the module closes the pool on stop")
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()

	tdb := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	require.NoError(t, postgres.Migrate(t.Context(), tdb.Bun), "a second run finds nothing to apply")
	var n int
	require.NoError(t, tdb.Bun.QueryRowContext(t.Context(), `SELECT count(*) FROM bun_migrations`).Scan(&n))
	require.Equal(t, 15, n, "the fifteen foundation migrations")
}

func TestOutboxInsertNotifies(t *testing.T) {
	t.Parallel()

	tdb := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	ctx := t.Context()
	conn, err := tdb.Bun.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, `LISTEN outbox_event`)
	require.NoError(t, err)
	_, err = tdb.Bun.ExecContext(ctx, `INSERT INTO tb_outbox_event (event_id, event_type, payload_version, aggregate_type, aggregate_id,
		resource_type, resource_id, request_id, correlation_id, payload) VALUES (gen_random_uuid(), 'x', 1, 'a', '1', 'r', '1', 'q', 'c', '{}')`)
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var channel string
	require.NoError(t, conn.Raw(func(dc any) error {
		n, err := dc.(*stdlib.Conn).Conn().WaitForNotification(wctx)
		if err == nil {
			channel = n.Channel
		}
		return err
	}))
	require.Equal(t, "outbox_event", channel, "an insert must wake LISTENing relays")
}
