package postgres

import (
	"database/sql"
	"errors"
	"fmt"

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
)

// sqlstateUniqueViolation is SQLSTATE 23505 (unique_violation).
const sqlstateUniqueViolation = "23505"

// translate maps driver errors to this package's sentinels. Every adapter
// function passes its database error through here exactly once.
func translate(err error) error {
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.As(err, &pgErr) && pgErr.Code == sqlstateUniqueViolation:
		return fmt.Errorf("%w: %s", ErrConflict, pgErr.ConstraintName)
	default:
		return err
	}
}
