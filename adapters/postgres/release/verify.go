package release

import (
	"context"
	"errors"
	"fmt"

	"github.com/uptrace/bun"
)

// errRollback makes RunInTx roll the smoke transaction back.
var errRollback = errors.New("smoke test rollback")

// Verify is the post-flight check: nothing pending, no drift, every
// constraint on the sets' tables validated, every index valid and ready,
// invariants at zero, and each set's smoke test passing inside a
// transaction that is always rolled back. Violations are in the report.
func Verify(ctx context.Context, db *bun.DB, sets []Set) (*Report, error) {
	r := &Report{Phase: "verify", Findings: []Finding{}}
	st, err := inspect(ctx, db, sets, r)
	if err != nil {
		return nil, fmt.Errorf("post-flight verify: %w", err)
	}
	for _, v := range r.Pending {
		r.add(SeverityViolation, "migration_pending", v, 1, "not applied; run `migrate up`")
	}
	for _, table := range st.man.Tables() {
		if err := verifyTable(ctx, db, table, r); err != nil {
			return nil, fmt.Errorf("post-flight verify: %w", err)
		}
	}
	if err := runRules(ctx, db, sets, r, st, true); err != nil {
		return nil, fmt.Errorf("post-flight verify: %w", err)
	}
	for _, s := range sets {
		if s.Smoke == nil || len(r.Pending) > 0 {
			continue
		}
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if err := s.Smoke(ctx, tx); err != nil {
				return err
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			r.add(SeverityViolation, "smoke_failed", s.Name, 1, "read/write smoke test failed: "+safeError(err))
		}
	}
	return r, nil
}

func verifyTable(ctx context.Context, db bun.IDB, table string, r *Report) error {
	ok, err := tableExists(ctx, db, table)
	if err != nil || !ok {
		return err
	}
	var names []string
	if err := db.NewRaw(`SELECT conname FROM pg_constraint WHERE conrelid = to_regclass(?) AND NOT convalidated ORDER BY conname`,
		table).Scan(ctx, &names); err != nil {
		return fmt.Errorf("read constraints of %s: %w", table, err)
	}
	for _, n := range names {
		r.add(SeverityViolation, "constraint_not_validated", n, 1, "constraint on "+table+" is NOT VALID; run ALTER TABLE ... VALIDATE CONSTRAINT in a migration")
	}
	names = nil
	if err := db.NewRaw(`SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE i.indrelid = to_regclass(?) AND NOT (i.indisvalid AND i.indisready) ORDER BY c.relname`,
		table).Scan(ctx, &names); err != nil {
		return fmt.Errorf("read indexes of %s: %w", table, err)
	}
	for _, n := range names {
		r.add(SeverityViolation, "index_invalid", n, 1, "index on "+table+" is not valid or not ready; drop and recreate it")
	}
	return nil
}
