package release

import "errors"

// Sentinels returned (possibly wrapped) by Up, Down and Verify; apps/migrate
// maps each to its exit code.
var (
	// ErrCheckFailed is returned by Up when the pre-flight check found a
	// violation; nothing was applied. Fix the data or schema and rerun.
	ErrCheckFailed = errors.New("pre-flight check failed: nothing applied; fix the reported violations and rerun")
	// ErrApplyFailed wraps a migration that failed; its transaction rolled
	// back and it is not recorded, so the run can be repeated after a fix.
	ErrApplyFailed = errors.New("apply migration failed")
	// ErrVerifyFailed is returned when the post-flight verification found a
	// violation after the migrations were applied.
	ErrVerifyFailed = errors.New("post-flight verification failed: stop the release and fix forward")
	// ErrLockTimeout is returned when another migrate run held the advisory
	// lock for longer than the lock timeout.
	ErrLockTimeout = errors.New("migration lock not acquired in time: another migrate run holds it; wait for it or raise --lock-timeout")
	// ErrRefused is returned by Down when rolling back would drop or rewrite
	// a table that holds rows; nothing was changed.
	ErrRefused = errors.New("down refused: a table it would drop or rewrite holds rows; data is never deleted, fix forward instead")
	// ErrForwardOnly is returned by Down when a migration it would roll
	// back has no down file (it is marked forward-only, with a reason, or
	// predates the rule); nothing was changed.
	ErrForwardOnly = errors.New("down refused: a migration it would roll back is forward-only; nothing changed, fix forward instead")
	// ErrUnknownVersion is returned by Down for a target version that no set
	// defines (use 0 to roll back everything).
	ErrUnknownVersion = errors.New("unknown migration version: use 0 or a version listed by `migrate status`")
)
