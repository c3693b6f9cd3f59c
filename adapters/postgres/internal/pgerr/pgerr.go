// Package pgerr is the Postgres adapter's one error translation: the root
// package and every store sub-package pass driver errors through Translate,
// so callers branch on the port sentinels (ports.ErrNotFound,
// ports.ErrConflict, ports.ErrUnavailable) without knowing pgx.
package pgerr

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

// sqlstateUniqueViolation is SQLSTATE 23505 (unique_violation).
const sqlstateUniqueViolation = "23505"

// Translate maps driver errors to the port sentinels, keeping the original
// wrapped: sql.ErrNoRows is ports.ErrNotFound, a unique violation is
// ports.ErrConflict (the message names the constraint), and a refused or
// broken connection is ports.ErrUnavailable. An error already carrying a
// port sentinel passes unchanged, so translating twice is harmless.
func Translate(err error) error {
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ports.ErrUnavailable), errors.Is(err, ports.ErrNotFound), errors.Is(err, ports.ErrConflict):
		return err
	case unreachable(err):
		return fmt.Errorf("%w: %w", ports.ErrUnavailable, err)
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: %w", ports.ErrNotFound, err)
	case errors.As(err, &pgErr) && pgErr.Code == sqlstateUniqueViolation:
		return fmt.Errorf("%w: %s", ports.ErrConflict, pgErr.ConstraintName)
	default:
		return err
	}
}

// Unavailable reports whether err means Postgres could not be reached or
// the connection broke (see Translate); it also knows the driver's errors
// for a connection it closed after such a failure.
func Unavailable(err error) bool {
	return err != nil && (errors.Is(err, ports.ErrUnavailable) || unreachable(err))
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
		// pgconn's error for a statement on a connection it closed after a
		// network failure is unexported; its text is stable ("conn closed").
		msg := err.Error()
		return strings.Contains(msg, "connection refused") || strings.HasSuffix(msg, "conn closed")
	}
}

// Affected returns the rows a statement changed.
func Affected(res interface{ RowsAffected() (int64, error) }) (int, error) {
	n, err := res.RowsAffected()
	return int(n), err
}
