package release

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
)

// UpResult is what Up did.
type UpResult struct {
	Waited  time.Duration `json:"waited_ns"`
	Check   *Report       `json:"check"`
	Applied []string      `json:"applied"`
	Verify  *Report       `json:"verify,omitempty"`
}

// Up takes the advisory lock (waiting at most lockTimeout), runs Check,
// applies the pending migrations (each in its own transaction, recorded only
// on success) and runs Verify. It never counts whole tables: writers keep
// writing during a release, and conservation is checked per migration by
// Check (migration_writes_data, drop_nonempty). It returns ErrLockTimeout, ErrCheckFailed,
// ErrApplyFailed or ErrVerifyFailed (wrapped) with the partial result.
func Up(ctx context.Context, db *bun.DB, sets []Set, lockTimeout time.Duration) (*UpResult, error) {
	res := &UpResult{Applied: []string{}}
	waited, err := withLock(ctx, db, lockTimeout, func() error { return up(ctx, db, sets, res) })
	res.Waited = waited
	return res, err
}

func up(ctx context.Context, db *bun.DB, sets []Set, res *UpResult) error {
	var err error
	if res.Check, err = Check(ctx, db, sets); err != nil {
		return err
	}
	if !res.Check.OK() {
		return fmt.Errorf("%w (%d violations)", ErrCheckFailed, res.Check.Violations())
	}
	ms, err := newMigrations(sets)
	if err != nil {
		return err
	}
	m := postgres.NewMigrator(db, ms)
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("%w: init migration tables: %w", ErrApplyFailed, err)
	}
	group, err := m.Migrate(ctx)
	for _, mg := range group.Migrations {
		if mg.ID > 0 { // recorded, so its transaction committed
			res.Applied = append(res.Applied, mg.Name)
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrApplyFailed, err)
	}
	if res.Verify, err = Verify(ctx, db, sets); err != nil {
		return err
	}
	if !res.Verify.OK() {
		return fmt.Errorf("%w (%d violations)", ErrVerifyFailed, res.Verify.Violations())
	}
	return nil
}
