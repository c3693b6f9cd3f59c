package pgerr_test

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/ports"
)

func TestTranslate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in   error
		want error
	}{
		{sql.ErrNoRows, ports.ErrNotFound},
		{fmt.Errorf("scan: %w", sql.ErrNoRows), ports.ErrNotFound},
		{&pgconn.PgError{Code: "23505", ConstraintName: "uq_x"}, ports.ErrConflict},
	}
	for _, tt := range tests {
		require.ErrorIs(t, pgerr.Translate(tt.in), tt.want, "input %v", tt.in)
	}
	other := errors.New("boom")
	require.Equal(t, other, pgerr.Translate(other))
	require.NoError(t, pgerr.Translate(nil))
	require.Contains(t, pgerr.Translate(&pgconn.PgError{Code: "23505", ConstraintName: "uq_x"}).Error(), "uq_x")
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
		got := pgerr.Translate(in)
		require.ErrorIs(t, got, ports.ErrUnavailable, "input %v", in)
		require.ErrorIs(t, got, in, "the original error stays wrapped: %v", in)
		require.NotErrorIs(t, got, ports.ErrNotFound, "input %v", in)
		require.Equal(t, got, pgerr.Translate(got), "translating twice changes nothing: %v", in)
	}
	require.NotErrorIs(t, pgerr.Translate(&pgconn.PgError{Code: "23514"}), ports.ErrUnavailable, "a check violation is not an outage")
}
