package pgidem

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/idempotency"
)

// VersionedParams are the arguments to UpdateVersioned.
type VersionedParams struct {
	// Table is the business table, e.g. "wallets".
	Table string
	// IDColumn is the key column. Default: "id".
	IDColumn string
	// ID is the row's key value.
	ID any
	// VersionColumn is the bigint version column. Default: "version".
	VersionColumn string
	// ExpectedVersion is the version the caller read the row at.
	ExpectedVersion int64
	// Set holds the columns to write, computed from the row read at
	// ExpectedVersion (e.g. {"balance": newBalance}). Values are bound as
	// parameters; pass bun.SafeQuery("balance + ?", n) for an expression.
	Set map[string]any
}

// UpdateVersioned writes p.Set under an optimistic lock (UPDATE t SET ...,
// version = version + 1 WHERE id = ID AND version = ExpectedVersion) and
// returns the new version. When the version moved it writes nothing and
// returns an *idempotency.VersionConflictError carrying the actual version
// (re-read, recompute, retry or answer 409); when the row does not exist
// it returns idempotency.ErrNotVisible. Of concurrent writers holding the
// same expected version, exactly one succeeds.
func UpdateVersioned(ctx context.Context, db bun.IDB, p VersionedParams) (int64, error) {
	p.IDColumn = cmp.Or(p.IDColumn, "id")
	p.VersionColumn = cmp.Or(p.VersionColumn, "version")
	if err := checkIdents(p.Table, p.IDColumn, p.VersionColumn); err != nil {
		return 0, fmt.Errorf("update versioned: %w", err)
	}
	if len(p.Set) == 0 {
		return 0, fmt.Errorf("update versioned %s: Set is empty: name the columns to write", p.Table)
	}
	if _, ok := p.Set[p.VersionColumn]; ok {
		return 0, fmt.Errorf("update versioned %s: Set must not contain the version column %q", p.Table, p.VersionColumn)
	}
	version := bun.Ident(p.VersionColumn)
	q, err := applySet(db.NewUpdate().TableExpr("?", bun.Ident(p.Table)), p.Set)
	if err != nil {
		return 0, fmt.Errorf("update versioned %s: %w", p.Table, err)
	}
	var next int64
	err = q.Set("? = ? + 1", version, version).
		Where("? = ?", bun.Ident(p.IDColumn), p.ID).
		Where("? = ?", version, p.ExpectedVersion).
		Returning("?", version).
		Scan(ctx, &next)
	switch {
	case err == nil:
		return next, nil
	case !errors.Is(err, sql.ErrNoRows):
		return 0, fmt.Errorf("update versioned %s %v: %w", p.Table, p.ID, pgerr.Translate(err))
	}

	var actual int64
	err = db.NewSelect().TableExpr("?", bun.Ident(p.Table)).ColumnExpr("?", version).
		Where("? = ?", bun.Ident(p.IDColumn), p.ID).Limit(1).Scan(ctx, &actual)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, idempotency.ErrNotVisible
	case err != nil:
		return 0, fmt.Errorf("update versioned %s: re-read version: %w", p.Table, pgerr.Translate(err))
	}
	// actual == expected cannot follow a miss under READ COMMITTED; still
	// report a conflict rather than claim a write that did not happen.
	return 0, &idempotency.VersionConflictError{Expected: p.ExpectedVersion, Actual: actual}
}
