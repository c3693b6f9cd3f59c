package release

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// DownResult is what Down did or would have done.
type DownResult struct {
	// RolledBack lists the migrations undone, newest first.
	RolledBack []string `json:"rolled_back"`
	// Blocking lists the tables holding rows that made Down refuse.
	Blocking []string `json:"blocking,omitempty"`
}

// reDownTable finds tables a down file drops or rewrites.
var reDownTable = regexp.MustCompile(`^(?:drop\s+table\s+(?:if\s+exists\s+)?|alter\s+table\s+(?:if\s+exists\s+)?(?:only\s+)?|truncate\s+(?:table\s+)?|delete\s+from\s+|update\s+)([\w.]+)`)

// Down rolls back, newest first, every applied migration with a version
// above to ("0" rolls back all), under the advisory lock. Before touching
// anything it checks every table the down files would drop or rewrite, and
// every table those migrations created; if any holds a row it changes
// nothing and returns ErrRefused with the blocking tables. Down never
// deletes data.
func Down(ctx context.Context, db *bun.DB, sets []Set, to string, lockTimeout time.Duration) (*DownResult, error) {
	res := &DownResult{RolledBack: []string{}}
	migs, err := listMigrations(sets)
	if err != nil {
		return res, err
	}
	known := to == "0"
	for _, m := range migs {
		known = known || m.Version == to
	}
	if !known {
		return res, fmt.Errorf("%w: %q", ErrUnknownVersion, to)
	}
	_, err = withLock(ctx, db, lockTimeout, func() error { return down(ctx, db, sets, migs, to, res) })
	return res, SafeError(err)
}

func down(ctx context.Context, db *bun.DB, sets []Set, migs []migration, to string, res *DownResult) error {
	applied, err := appliedVersions(ctx, db)
	if err != nil {
		return err
	}
	man, err := BuildManifest(ctx, db, sets)
	if err != nil {
		return err
	}
	var targets []migration
	for i := len(migs) - 1; i >= 0; i-- {
		if m := migs[i]; applied[m.Version] && m.Version > to {
			targets = append(targets, m)
		}
	}
	tables := map[string]bool{}
	for _, m := range targets {
		if m.Down == "" {
			return forwardOnly(m)
		}
		sql, err := readSQL(m, m.Down)
		if err != nil {
			return err
		}
		for _, st := range statements(sql) {
			if mm := reDownTable.FindStringSubmatch(st); mm != nil {
				tables[strings.TrimPrefix(mm[1], "public.")] = true
			}
		}
		for _, obj := range man.Created(m.Version) {
			if t, ok := strings.CutPrefix(obj, KindTable+":"); ok && t != "" {
				tables[t] = true
			}
		}
	}
	for t := range tables {
		ok, err := tableExists(ctx, db, t)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		var has bool
		if err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %q)`, t)).Scan(&has); err != nil {
			return fmt.Errorf("look for rows in %s: %w", t, err)
		}
		if has {
			res.Blocking = append(res.Blocking, t)
		}
	}
	if len(res.Blocking) > 0 {
		sort.Strings(res.Blocking)
		return ErrRefused
	}
	for _, t := range targets {
		if err := rollBack(ctx, db, t); err != nil {
			return fmt.Errorf("%w: %s down: %w", ErrApplyFailed, t.Version, err)
		}
		res.RolledBack = append(res.RolledBack, t.Version)
	}
	return nil
}

// rollBack runs m's down file under the same SET LOCAL lock_timeout and
// statement_timeout as up (defaults, or the file's -- migrate: lines) and
// removes m from bun_migrations in the same transaction. It is not retried:
// a down is an operator's deliberate step, rerun it.
func rollBack(ctx context.Context, db *bun.DB, m migration) error {
	b, err := fs.ReadFile(m.fsys, m.Down)
	if err != nil {
		return fmt.Errorf("read %s: %w", m.Down, err)
	}
	f, err := parseSQLFile(string(b))
	if err != nil {
		return &parseError{file: m.Down, err: err}
	}
	lockT, stmtT := cmp.Or(f.LockTimeout, DefaultMigrationLockTimeout), cmp.Or(f.StatementTimeout, DefaultStatementTimeout)
	settings := fmt.Sprintf("SET %%[1]s lock_timeout = '%dms'; SET %%[1]s statement_timeout = '%dms'", lockT.Milliseconds(), stmtT.Milliseconds())
	run := func(db bun.IConn, scope string) error {
		if _, err := db.ExecContext(ctx, fmt.Sprintf(settings, scope)); err != nil {
			return err
		}
		for _, q := range f.Queries {
			if _, err := db.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		if _, err := db.ExecContext(ctx, `DELETE FROM bun_migrations WHERE name = ?`, m.Version); err != nil {
			return fmt.Errorf("record rollback: %w", err)
		}
		return nil
	}
	if !strings.HasSuffix(m.Down, ".tx.down.sql") { // e.g. DROP INDEX CONCURRENTLY: no transaction
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		defer conn.ExecContext(context.WithoutCancel(ctx), `RESET lock_timeout; RESET statement_timeout`) //nolint:errcheck // best effort before the connection returns to the pool
		return run(conn, "SESSION")
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return run(tx, "LOCAL") })
}

// forwardOnly is the refusal to roll back m, which has no down file, with
// the reason its up file gives.
func forwardOnly(m migration) error {
	f, err := readMigration(m)
	if err != nil {
		return err
	}
	if f.ForwardOnly == "" {
		return fmt.Errorf("%w: migration %s_%s has no down file", ErrForwardOnly, m.Version, m.Name)
	}
	return fmt.Errorf("%w: migration %s_%s is forward-only: %s", ErrForwardOnly, m.Version, m.Name, f.ForwardOnly)
}
