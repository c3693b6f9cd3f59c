package release

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// UpResult is what Up did.
type UpResult struct {
	Waited  time.Duration `json:"waited_ns"`
	Check   *Report       `json:"check"`
	Applied []string      `json:"applied"`
	// Failed is the migration that stopped the run, if one did.
	Failed *MigrationError `json:"failed,omitempty"`
	Verify *Report         `json:"verify,omitempty"`
}

// Up is UpWith with default options and the given advisory-lock timeout.
func Up(ctx context.Context, db *bun.DB, sets []Set, lockTimeout time.Duration) (*UpResult, error) {
	return UpWith(ctx, db, sets, UpOptions{LockTimeout: lockTimeout})
}

// UpWith takes the advisory lock (waiting at most opts.LockTimeout), runs
// Check, applies the pending migrations and runs Verify. Each migration runs
// in its own transaction under SET LOCAL lock_timeout and statement_timeout
// and is recorded in that transaction; one that hits its lock_timeout is
// retried with backoff (opts.LockTries, opts.LockBackoff). Up never counts
// whole tables: writers keep writing during a release, and conservation is
// checked per migration by Check (migration_writes_data, drop_nonempty).
// It returns ErrLockTimeout, ErrCheckFailed, ErrApplyFailed (wrapping a
// *MigrationError, also in the result's Failed) or ErrVerifyFailed,
// wrapped, with the partial result. Error messages hold no row values.
func UpWith(ctx context.Context, db *bun.DB, sets []Set, opts UpOptions) (*UpResult, error) {
	opts = opts.withDefaults()
	res := &UpResult{Applied: []string{}}
	waited, err := withLock(ctx, db, opts.LockTimeout, func() error { return up(ctx, db, sets, opts, res) })
	res.Waited = waited
	if err != nil {
		return res, SafeError(err)
	}
	return res, nil
}

func up(ctx context.Context, db *bun.DB, sets []Set, opts UpOptions, res *UpResult) error {
	reh, err := Rehearse(ctx, db, sets)
	if err != nil {
		return fmt.Errorf("pre-flight check: %w", err)
	}
	if res.Check, err = check(ctx, db, sets, reh, CheckOptions{Strict: opts.Strict}); err != nil {
		return err
	}
	if !res.Check.OK() {
		return fmt.Errorf("%w (%d violations)", ErrCheckFailed, res.Check.Violations())
	}
	res.Applied, err = apply(ctx, db, sets, reh, res.Check.Pending, opts)
	if err != nil {
		errors.As(err, &res.Failed)
		return err
	}
	if res.Verify, err = verify(ctx, db, sets, reh); err != nil {
		return err
	}
	if !res.Verify.OK() {
		return fmt.Errorf("%w (%d violations)", ErrVerifyFailed, res.Verify.Violations())
	}
	return nil
}
