package pgidem

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/idempotency"
)

// ErrBadIdentifier is returned when a table or column name given to
// Transition or UpdateVersioned is not a plain SQL identifier.
var ErrBadIdentifier = errors.New("not a plain sql identifier: want [a-z_][a-z0-9_]* (optionally schema.table)")

// identRE accepts lowercase identifiers, optionally schema-qualified. Names
// are also quoted with bun.Ident; the check makes a mistake (or a name that
// came from user input) fail loudly instead of addressing another column.
var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$`)

// TransitionParams are the arguments to Transition.
type TransitionParams struct {
	// Table is the business table, e.g. "jobs" or "billing.jobs".
	Table string
	// IDColumn is the key column. Default: "id".
	IDColumn string
	// ID is the row's key value.
	ID any
	// StatusColumn is the smallint status column. Default: "status".
	StatusColumn string
	// From is the status the caller read; To the status to set.
	From, To int16
	// Set holds extra columns to write with the move (e.g. "finished_at").
	// Values are bound as parameters; pass bun.SafeQuery("now()") for an
	// expression.
	Set map[string]any
	// Allowed is the caller's transition table. It only classifies a miss
	// (IllegalTransitionError.Stale); nil allows nothing.
	Allowed func(from, to int16) bool
	// VisibleWhere, with VisibleArgs, is an optional predicate limiting the
	// rows the caller may see, e.g. "tenant_id = ?". It applies to the
	// update and to the re-read, so a row outside it answers ErrNotVisible,
	// exactly like a missing one. It is SQL: a constant, never user input.
	VisibleWhere string
	VisibleArgs  []any
}

// Transition moves one row from p.From to p.To with a conditional update
// (UPDATE t SET status = To, ... WHERE id = ID AND status = From [AND
// visible]), so of two concurrent movers exactly one wins. When no row
// changed it re-reads the status under the same visibility and returns the
// core outcome (idempotency.ResolveNoRow):
//
//   - idempotency.ErrAlreadyDone: the row is already in To (a retry or the
//     lost race); treat it as success and cause no side effect again;
//   - *idempotency.IllegalTransitionError: the row is in another status;
//   - idempotency.ErrNotVisible: no such row, or not visible to the caller.
//
// Run it in the caller's transaction when the move goes with other writes.
func Transition(ctx context.Context, db bun.IDB, p TransitionParams) error {
	p.IDColumn = cmp.Or(p.IDColumn, "id")
	p.StatusColumn = cmp.Or(p.StatusColumn, "status")
	if err := checkIdents(p.Table, p.IDColumn, p.StatusColumn); err != nil {
		return fmt.Errorf("transition: %w", err)
	}
	if _, ok := p.Set[p.StatusColumn]; ok {
		return fmt.Errorf("transition %s: Set must not contain the status column %q; use To", p.Table, p.StatusColumn)
	}
	q := db.NewUpdate().TableExpr("?", bun.Ident(p.Table)).
		Set("? = ?", bun.Ident(p.StatusColumn), p.To)
	q, err := applySet(q, p.Set)
	if err != nil {
		return fmt.Errorf("transition %s: %w", p.Table, err)
	}
	q = q.Where("? = ?", bun.Ident(p.IDColumn), p.ID).
		Where("? = ?", bun.Ident(p.StatusColumn), p.From)
	if p.VisibleWhere != "" {
		q = q.Where("("+p.VisibleWhere+")", p.VisibleArgs...)
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return fmt.Errorf("transition %s %v from %d to %d: %w", p.Table, p.ID, p.From, p.To, pgerr.Translate(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("transition %s: rows affected: %w", p.Table, err)
	} else if n > 0 {
		return nil
	}

	var current *int16
	var status int16
	sq := db.NewSelect().TableExpr("?", bun.Ident(p.Table)).
		ColumnExpr("?", bun.Ident(p.StatusColumn)).
		Where("? = ?", bun.Ident(p.IDColumn), p.ID)
	if p.VisibleWhere != "" {
		sq = sq.Where("("+p.VisibleWhere+")", p.VisibleArgs...)
	}
	switch err := sq.Limit(1).Scan(ctx, &status); {
	case err == nil:
		current = &status
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("transition %s: re-read status: %w", p.Table, pgerr.Translate(err))
	}
	_, err = idempotency.ResolveNoRow(current, p.From, p.To, p.Allowed)
	return err
}

// applySet adds "col = value" for every entry of set, in column order so the
// statement text is stable.
func applySet(q *bun.UpdateQuery, set map[string]any) (*bun.UpdateQuery, error) {
	for _, col := range slices.Sorted(maps.Keys(set)) {
		if err := checkIdents(col); err != nil {
			return nil, err
		}
		q = q.Set("? = ?", bun.Ident(col), set[col])
	}
	return q, nil
}

func checkIdents(names ...string) error {
	for _, n := range names {
		if !identRE.MatchString(n) {
			return fmt.Errorf("%q: %w", n, ErrBadIdentifier)
		}
	}
	return nil
}
