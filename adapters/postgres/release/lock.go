package release

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// LockKey is the pg advisory lock key held by Up and Down ("july" in hex).
const LockKey int64 = 0x6A756C79

// DefaultLockTimeout bounds how long Up and Down wait for the lock.
const DefaultLockTimeout = 60 * time.Second

const lockPoll = 200 * time.Millisecond

// withLock runs fn while holding the session advisory lock on a dedicated
// connection. It returns ErrLockTimeout when timeout passes first.
func withLock(ctx context.Context, db *bun.DB, timeout time.Duration, fn func() error) (waited time.Duration, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("take connection for migration lock: %w", err)
	}
	defer conn.Close()
	start := time.Now()
	for {
		var ok bool
		if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(?)`, LockKey).Scan(&ok); err != nil {
			return time.Since(start), fmt.Errorf("take migration lock: %w", err)
		}
		if ok {
			break
		}
		if time.Since(start) >= timeout {
			return time.Since(start), fmt.Errorf("%w (waited %s)", ErrLockTimeout, timeout)
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(lockPoll):
		}
	}
	waited = time.Since(start)
	defer func() {
		// A fresh context: the lock must be released even when ctx ended.
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(?)`, LockKey)
	}()
	return waited, fn()
}
