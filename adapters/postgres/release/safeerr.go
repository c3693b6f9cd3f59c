package release

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Release output holds counts, codes and safe identifiers only: it goes to
// CI logs and tickets that many people read. A Postgres error message and detail may quote row
// values ("invalid input syntax for type bigint: \"card-…\""), so they are
// never printed: a *pgconn.PgError is rendered from its SQLSTATE and the
// schema names it carries.

// conditionNames are the names of the SQLSTATEs a release step meets most.
var conditionNames = map[string]string{
	"22001": "string_data_right_truncation",
	"22003": "numeric_value_out_of_range",
	"22007": "invalid_datetime_format",
	"22P02": "invalid_text_representation",
	"23502": "not_null_violation",
	"23503": "foreign_key_violation",
	"23505": "unique_violation",
	"23514": "check_violation",
	"40001": "serialization_failure",
	"40P01": "deadlock_detected",
	"42601": "syntax_error",
	"42703": "undefined_column",
	"42704": "undefined_object",
	"42710": "duplicate_object",
	"42P01": "undefined_table",
	"42P07": "duplicate_table",
	"42883": "undefined_function",
	"55P03": "lock_not_available",
	"57014": "query_canceled",
}

// pgSafe renders e from its SQLSTATE and safe names only.
func pgSafe(e *pgconn.PgError) string {
	var b strings.Builder
	b.WriteString("SQLSTATE ")
	b.WriteString(e.Code)
	if n := conditionNames[e.Code]; n != "" {
		b.WriteString(" " + n)
	}
	var names []string
	for _, kv := range [][2]string{{"table", e.TableName}, {"column", e.ColumnName}, {"constraint", e.ConstraintName}, {"type", e.DataTypeName}} {
		if kv[1] != "" {
			names = append(names, kv[0]+" "+kv[1])
		}
	}
	if len(names) > 0 {
		b.WriteString(" (" + strings.Join(names, ", ") + ")")
	}
	return b.String()
}

// pgErrors collects every *pgconn.PgError in err's tree.
func pgErrors(err error) []*pgconn.PgError {
	var out []*pgconn.PgError
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if pe, ok := err.(*pgconn.PgError); ok { //nolint:errorlint // this walks the chain itself, one link at a time
			out = append(out, pe)
			return
		}
		switch u := err.(type) { //nolint:errorlint // the walk above
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}

// safeErr is an error whose message was made safe; it unwraps to the
// original so errors.Is and errors.As keep working.
type safeErr struct {
	msg string
	err error
}

func (e *safeErr) Error() string { return e.msg }
func (e *safeErr) Unwrap() error { return e.err }

// SafeError returns err with every Postgres error in its message replaced
// by its SQLSTATE and safe names (see the top of this file); errors.Is and
// errors.As still see the original chain. Errors without a Postgres error
// are returned unchanged: their text is this package's own, which names
// only safe identifiers. apps/migrate renders every error through it.
func SafeError(err error) error {
	pes := pgErrors(err)
	if len(pes) == 0 {
		return err
	}
	msg := err.Error()
	for _, pe := range pes {
		msg = strings.ReplaceAll(msg, pe.Error(), pgSafe(pe))
	}
	for _, pe := range pes {
		// A wrapper that reformatted the message (not %w) could still quote it.
		if pe.Message != "" && strings.Contains(msg, pe.Message) || pe.Detail != "" && strings.Contains(msg, pe.Detail) {
			msg = pgSafe(pe)
			break
		}
	}
	return &safeErr{msg: msg, err: err}
}

// safeError is SafeError as text for a finding's message.
func safeError(err error) string {
	if err == nil {
		return "transaction committed unexpectedly"
	}
	return SafeError(err).Error()
}

// isSQLState reports whether err holds a Postgres error with code.
func isSQLState(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}
