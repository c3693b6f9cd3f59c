package postgres

import "github.com/uptrace/bun"

// CountWakes replaces the post-commit wake-up that Open installed on db
// with one that calls count, synchronously, where it would send a NOTIFY.
func CountWakes(db *bun.DB, count func()) {
	db.ResetQueryHooks()
	db.AddQueryHook(traceHook{})
	db.AddQueryHook(wakeHook{w: wakeFunc(count)})
}

type wakeFunc func()

func (f wakeFunc) wake() { f() }
