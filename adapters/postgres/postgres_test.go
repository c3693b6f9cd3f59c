package postgres_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/ports"
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
	require.Equal(t, 3, n)
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

func TestTranslate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in   error
		want error
	}{
		{sql.ErrNoRows, ports.ErrNotFound},
		{fmt.Errorf("scan: %w", sql.ErrNoRows), postgres.ErrNotFound},
		{&pgconn.PgError{Code: "23505", ConstraintName: "uq_x"}, postgres.ErrConflict},
	}
	for _, tt := range tests {
		require.ErrorIs(t, postgres.Translate(tt.in), tt.want, "input %v", tt.in)
	}
	other := errors.New("boom")
	require.Equal(t, other, postgres.Translate(other))
	require.NoError(t, postgres.Translate(nil))
	require.Contains(t, postgres.Translate(&pgconn.PgError{Code: "23505", ConstraintName: "uq_x"}).Error(), "uq_x")
}

func TestTranslateConnectionFailuresAreUnavailable(t *testing.T) {
	t.Parallel()

	var real error
	_, real = testinfra.UnreachableDB(t).ExecContext(t.Context(), "SELECT 1")
	require.Error(t, real, "a query on an unreachable server")
	for _, in := range []error{
		real,
		&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
		fmt.Errorf("begin: %w", driver.ErrBadConn),
		&pgconn.PgError{Code: "08006"},
		&pgconn.PgError{Code: "57P01"},
		errors.New("dial tcp 10.0.0.1:5432: connect: connection refused"),
	} {
		got := postgres.Translate(in)
		require.ErrorIs(t, got, ports.ErrUnavailable, "input %v", in)
		require.ErrorIs(t, got, in, "the original error stays wrapped: %v", in)
		require.NotErrorIs(t, got, ports.ErrNotFound, "input %v", in)
		require.Equal(t, got, postgres.Translate(got), "translating twice changes nothing: %v", in)
	}
	require.NotErrorIs(t, postgres.Translate(&pgconn.PgError{Code: "23514"}), ports.ErrUnavailable, "a check violation is not an outage")
}
