package postgres

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/july/template/core/ports"
)

// Sentinels that adapter functions in this package return (wrapped) so
// callers can branch with errors.Is without knowing pgx. They are the port
// errors, so errors.Is(err, ports.ErrNotFound) holds as well.
var (
	// ErrNotFound is returned when a lookup by key matches no row.
	ErrNotFound = ports.ErrNotFound
	// ErrConflict is returned when a write violates a unique constraint; the
	// wrapped message names the constraint.
	ErrConflict = ports.ErrConflict
	// ErrUnavailable is returned when Postgres cannot be reached (refused
	// or timed-out connection, dropped connection, server shutting down).
	// Nothing was changed; callers may retry later.
	ErrUnavailable = ports.ErrUnavailable
)

// sqlstateUniqueViolation is SQLSTATE 23505 (unique_violation).
const sqlstateUniqueViolation = "23505"

// translate maps driver errors to this package's sentinels, keeping the
// original wrapped. Every adapter function passes its database error
// through here; an error already carrying a port sentinel passes unchanged,
// so translating twice is harmless.
func translate(err error) error {
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ports.ErrUnavailable), errors.Is(err, ports.ErrNotFound), errors.Is(err, ports.ErrConflict):
		return err
	case unreachable(err):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.As(err, &pgErr) && pgErr.Code == sqlstateUniqueViolation:
		return fmt.Errorf("%w: %s", ErrConflict, pgErr.ConstraintName)
	default:
		return err
	}
}

// unreachable reports whether err means the server could not be reached or
// the connection broke, rather than that the statement was refused.
func unreachable(err error) bool {
	var (
		connErr *pgconn.ConnectError // dial, TLS, auth or connect_timeout
		opErr   *net.OpError
		pgErr   *pgconn.PgError
	)
	switch {
	case errors.As(err, &connErr), errors.As(err, &opErr), errors.Is(err, driver.ErrBadConn):
		return true
	case errors.As(err, &pgErr):
		// Class 08 is connection exception; 57P01..57P03 are the server
		// shutting down or not yet accepting connections.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	default:
		return strings.Contains(err.Error(), "connection refused")
	}
}
