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
// constraint on the owned tables validated, every index valid and ready
// (see Check), invariants at zero, and each set's smoke test passing inside a
// transaction that is always rolled back. Violations are in the report.
func Verify(ctx context.Context, db *bun.DB, sets []Set) (*Report, error) {
	reh, err := Rehearse(ctx, db, sets)
	if err != nil {
		return nil, fmt.Errorf("post-flight verify: %w", err)
	}
	return verify(ctx, db, sets, reh)
}

// verify is Verify on a rehearsal already taken; up reuses check's, since
// a rehearsal depends on the migration files, not on the live data.
func verify(ctx context.Context, db *bun.DB, sets []Set, reh *Rehearsal) (*Report, error) {
	r := &Report{Phase: "verify", Findings: []Finding{}}
	st, err := inspect(ctx, db, sets, reh, r)
	if err != nil {
		return nil, fmt.Errorf("post-flight verify: %w", err)
	}
	for _, v := range r.Pending {
		r.add(SeverityViolation, "migration_pending", v, 1, "not applied; run `migrate up`")
	}
	if err := runRules(ctx, db, sets, r, st, true, false); err != nil {
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
