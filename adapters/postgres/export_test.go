package postgres

import "github.com/uptrace/bun"

// CountWakes replaces the post-commit wake-up that Open installed on db
// with one that calls count, synchronously, where it would send a NOTIFY.
func CountWakes(db *bun.DB, count func()) {
	// In place: WithQueryHook returns a copy the callers do not hold.
	db.ResetQueryHooks()                          //nolint:staticcheck // in place, see above
	db.AddQueryHook(traceHook{})                  //nolint:staticcheck // in place, see above
	db.AddQueryHook(wakeHook{w: wakeFunc(count)}) //nolint:staticcheck // in place, see above
}

type wakeFunc func()

func (f wakeFunc) wake() { f() }
