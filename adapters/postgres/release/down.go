package release

import (
	"cmp"
	"context"
	"errors"
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
// nothing and returns ErrRefused with the blocking tables. A writer may
// commit a row after that first look, so each down file looks again where
// it runs: a .tx down file takes ACCESS EXCLUSIVE locks on its tables in its
// own transaction before its first statement, and a down file without .tx
// runs each statement that drops or rewrites a table in a transaction of
// its own, after that lock. A row found then stops the rollback at that
// migration (ErrRefused, the tables in Blocking; the migrations rolled back
// before it are in RolledBack). Down never deletes data.
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

// downTarget is one migration to roll back and the tables its rollback
// must find empty.
type downTarget struct {
	migration
	tables []string
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
	var targets []downTarget
	all := map[string]bool{}
	for i := len(migs) - 1; i >= 0; i-- {
		m := migs[i]
		if !applied[m.Version] || m.Version <= to {
			continue
		}
		if m.Down == "" {
			return forwardOnly(m)
		}
		sql, err := readSQL(m, m.Down)
		if err != nil {
			return err
		}
		if f, bad := downRefused(m); bad {
			return fmt.Errorf("migration %s: %s; nothing was rolled back", m.Version, f.Message)
		}
		tables := map[string]bool{}
		for _, t := range downTables(sql) {
			tables[t] = true
		}
		for _, obj := range man.Created(m.Version) {
			if t, ok := strings.CutPrefix(obj, KindTable+":"); ok && t != "" {
				tables[t] = true
			}
		}
		for t := range tables {
			all[t] = true
		}
		targets = append(targets, downTarget{migration: m, tables: sortedKeys(tables)})
	}
	// The first look, without locks: in the usual case a refusal changes nothing.
	blocking, err := nonEmpty(ctx, db, sortedKeys(all))
	if err != nil {
		return err
	}
	if len(blocking) > 0 {
		res.Blocking = blocking
		return ErrRefused
	}
	for _, t := range targets {
		if err := rollBack(ctx, db, t); err != nil {
			var re *refusedError
			if errors.As(err, &re) {
				res.Blocking = re.tables
				return fmt.Errorf("%w: rows were committed to %s while down ran; migration %s and older stay applied",
					ErrRefused, strings.Join(re.tables, ", "), t.Version)
			}
			return fmt.Errorf("%w: %s down: %w", ErrApplyFailed, t.Version, err)
		}
		res.RolledBack = append(res.RolledBack, t.Version)
	}
	return nil
}

// downRefused reports a .tx down file that uses CONCURRENTLY: Postgres
// refuses it inside the file's transaction, so down would fail there.
// Check reports it for a pending migration (concurrently_in_tx), and Down
// refuses before rolling anything back.
func downRefused(m migration) (Finding, bool) {
	if !strings.HasSuffix(m.Down, ".tx.down.sql") {
		return Finding{}, false
	}
	sql, err := readSQL(m, m.Down)
	if err != nil || !reConcurrently.MatchString(strings.Join(statements(sql), ";")) {
		return Finding{}, false
	}
	return Finding{Severity: SeverityViolation, Code: "concurrently_in_tx", Object: m.Version, Count: 1,
		Message: fmt.Sprintf("%s uses CONCURRENTLY in a .tx down file, where Postgres refuses it; rename it without .tx, so its statements run one at a time / "+
			"回滚文件 %s 在事务中使用 CONCURRENTLY，请去掉文件名中的 .tx", m.Down, m.Down)}, true
}

// downTables lists the tables the statements of a down file drop or
// rewrite, unquoted and without the public. prefix.
func downTables(sql string) []string {
	var out []string
	for _, st := range statements(strings.ToLower(sql)) {
		if mm := reDownTable.FindStringSubmatch(st); mm != nil {
			out = append(out, strings.TrimPrefix(mm[1], "public."))
		}
	}
	return out
}

// reAnyConcurrently finds a statement Postgres refuses in a transaction.
var reAnyConcurrently = regexp.MustCompile(`(?i)\bconcurrently\b`)

// refusedError is a table found holding rows under the lock its rollback
// statement needs.
type refusedError struct{ tables []string }

func (e *refusedError) Error() string { return strings.Join(e.tables, ", ") + " hold rows" }

// nonEmpty returns, sorted, the tables that exist and hold a row.
func nonEmpty(ctx context.Context, db bun.IDB, tables []string) ([]string, error) {
	var out []string
	for _, t := range tables {
		ok, err := tableExists(ctx, db, t)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		var has bool
		if err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s)`, pgIdent(t))).Scan(&has); err != nil {
			return nil, fmt.Errorf("look for rows in %s: %w", t, err)
		}
		if has {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out, nil
}

// lockEmpty takes ACCESS EXCLUSIVE locks on the tables that exist, in
// name order, then looks for rows: inside tx, no writer can add one
// before tx ends. It returns a *refusedError when a table holds a row.
func lockEmpty(ctx context.Context, tx bun.IDB, tables []string) error {
	var locked []string
	for _, t := range tables {
		ok, err := tableExists(ctx, tx, t)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if _, err := tx.ExecContext(ctx, `LOCK TABLE `+pgIdent(t)+` IN ACCESS EXCLUSIVE MODE`); err != nil {
			return fmt.Errorf("lock %s: %w", t, err)
		}
		locked = append(locked, t)
	}
	blocking, err := nonEmpty(ctx, tx, locked)
	if err != nil {
		return err
	}
	if len(blocking) > 0 {
		return &refusedError{tables: blocking}
	}
	return nil
}

// rollBack runs m's down file under the same SET LOCAL lock_timeout and
// statement_timeout as up (defaults, or the file's -- migrate: lines) and
// removes m from bun_migrations. A .tx down file runs in one transaction
// that first locks m.tables and finds them empty. A down file without .tx
// (e.g. DROP INDEX CONCURRENTLY) runs one statement at a time, as up does;
// a statement that drops or rewrites a table runs in a transaction of its
// own that first locks that table and finds it empty. It is not retried: a
// down is an operator's deliberate step, rerun it.
func rollBack(ctx context.Context, db *bun.DB, m downTarget) error {
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
	unrecord := func(db bun.IConn) error {
		if _, err := db.ExecContext(ctx, `DELETE FROM bun_migrations WHERE name = ?`, m.Version); err != nil {
			return fmt.Errorf("record rollback: %w", err)
		}
		return nil
	}
	if strings.HasSuffix(m.Down, ".tx.down.sql") {
		return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(settings, "LOCAL")); err != nil {
				return err
			}
			if err := lockEmpty(ctx, tx, m.tables); err != nil {
				return err
			}
			for _, q := range f.Queries {
				if _, err := tx.ExecContext(ctx, q); err != nil {
					return err
				}
			}
			return unrecord(tx)
		})
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	defer conn.ExecContext(context.WithoutCancel(ctx), `RESET lock_timeout; RESET statement_timeout`) //nolint:errcheck // best effort before the connection returns to the pool
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(settings, "SESSION")); err != nil {
		return err
	}
	for _, st := range oneByOne(f.Queries) {
		tables := downTables(st)
		if len(tables) == 0 || reAnyConcurrently.MatchString(st) {
			// ... DETACH PARTITION ... CONCURRENTLY cannot run in a
			// transaction: the first look is all it gets.
			if _, err := conn.ExecContext(ctx, st); err != nil {
				return err
			}
			continue
		}
		err := conn.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if err := lockEmpty(ctx, tx, tables); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, st)
			return err
		})
		if err != nil {
			return err
		}
	}
	return unrecord(conn)
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
