package release

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/uptrace/bun"
)

// A migration file without .tx runs statement by statement, so a failure
// (a lock_timeout in CREATE INDEX CONCURRENTLY, a lost connection, a killed
// process) leaves what its finished statements did, and perhaps a
// half-built INVALID index. Up records such a migration as started in
// UnfinishedTable before its first statement and removes the record in the
// transaction that records it as applied. While a pending migration is
// recorded there, Check and Verify take the objects it touches, in any
// state between before and after, as its leftovers rather than as drift or
// stray objects, and the next Up drops the INVALID indexes among them and
// reruns the migration from the top, which rebuilds the rest.

// UnfinishedTable records the migrations without .tx that started and have
// not finished (name is the version, as in bun_migrations).
const UnfinishedTable = "release_unfinished_migration"

// initUnfinished creates UnfinishedTable.
func initUnfinished(ctx context.Context, db bun.IDB) error {
	_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+UnfinishedTable+` (
		name varchar(255) NOT NULL PRIMARY KEY, started_at timestamptz NOT NULL DEFAULT current_timestamp)`)
	return err
}

// unfinishedVersions reads UnfinishedTable without creating it.
func unfinishedVersions(ctx context.Context, db bun.IDB) (map[string]bool, error) {
	out := map[string]bool{}
	ok, err := tableExists(ctx, db, UnfinishedTable)
	if err != nil || !ok {
		return out, err
	}
	rows, err := db.QueryContext(ctx, `SELECT name FROM `+UnfinishedTable)
	if err != nil {
		return nil, fmt.Errorf("read unfinished migrations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("read unfinished migrations: %w", err)
		}
		out[name] = true
	}
	return out, rows.Err()
}

// markUnfinished records version as started.
func markUnfinished(ctx context.Context, db bun.IConn, version string) error {
	if _, err := db.ExecContext(ctx, `INSERT INTO `+UnfinishedTable+` (name) VALUES (?) ON CONFLICT (name) DO NOTHING`, version); err != nil {
		return fmt.Errorf("record migration as started: %w", err)
	}
	return nil
}

// touch adds every object one statement created, altered or dropped to
// what the migration touches, including objects a later statement of the
// same migration drops again: a failure in between leaves them.
func (s *Step) touch(d Change) {
	if s.touched == nil {
		s.touched = map[string]bool{}
	}
	for k := range d.Created {
		s.touched[k] = true
	}
	for k := range d.Altered {
		s.touched[k] = true
	}
	for _, k := range d.Dropped {
		s.touched[k] = true
	}
}

// resumable returns the objects the unfinished pending migrations touch:
// Check and Verify do not report them as drift, stray or invalid.
func resumable(reh *Rehearsal, unfinished, applied map[string]bool) map[string]string {
	out := map[string]string{}
	for v := range unfinished {
		if applied[v] {
			continue
		}
		if step := reh.Step(v); step != nil {
			for k := range step.touched {
				out[k] = v
			}
		}
	}
	return out
}

// reportUnfinished adds a warning per unfinished pending migration with the
// number of its leftovers (objects that differ from before it ran).
func reportUnfinished(r *Report, leftovers map[string]int64, unfinished, applied map[string]bool) {
	versions := sortedKeys(unfinished)
	for _, v := range versions {
		if applied[v] {
			continue
		}
		r.add(SeverityWarning, "migration_unfinished", v, leftovers[v],
			fmt.Sprintf("migration %s (no .tx) stopped part way in an earlier run; the count is the objects it left changed. "+
				"`migrate up` drops the INVALID indexes among them and reruns it from the top, which rebuilds the rest / "+
				"迁移 %s 上次执行到一半失败；`migrate up` 会从头重新执行并重建遗留对象", v, v))
	}
}

// dropInvalidLeftovers drops, concurrently, the INVALID or not ready
// indexes among the objects step touches: a half-built index of a failed
// CREATE INDEX CONCURRENTLY (which CREATE INDEX ... IF NOT EXISTS would
// keep) or of a failed DROP INDEX CONCURRENTLY. Such an index answers no
// query, so dropping it loses nothing; the rerun builds it again.
func dropInvalidLeftovers(ctx context.Context, conn bun.IConn, step *Step) error {
	if step == nil {
		return nil
	}
	var names []string
	for k := range step.touched {
		if name, ok := strings.CutPrefix(k, KindIndex+":"); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		var invalid bool
		if err := conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			WHERE c.relname = ? AND c.relnamespace = current_schema()::regnamespace AND NOT (i.indisvalid AND i.indisready))`, name).Scan(&invalid); err != nil {
			return fmt.Errorf("look up leftover index %s: %w", name, err)
		}
		if !invalid {
			continue
		}
		if _, err := conn.ExecContext(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+pgIdent(name)); err != nil {
			return fmt.Errorf("drop leftover INVALID index %s: %w", name, err)
		}
	}
	return nil
}
