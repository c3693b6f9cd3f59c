package release

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/uptrace/bun"
)

// Migrations are structure-only, and conservation of data is checked on the
// rows a migration touches, not by counting whole tables (writers keep
// writing during a release): a pending migration may not change rows, and
// may not drop a table or column that holds any.

// checkPending adds, for every pending migration, a violation for a
// malformed -- migrate: directive (migration_directive_invalid), for a
// .tx down file that down could not run (concurrently_in_tx), for
// data-changing statements (migration_writes_data) and for each table or
// column it drops that holds rows (drop_nonempty). Row presence is one
// EXISTS probe per target, never a count.
func checkPending(ctx context.Context, db bun.IDB, sets []Set, pending []string, r *Report) error {
	migs, err := listMigrations(sets)
	if err != nil {
		return err
	}
	for _, m := range migs {
		if !slices.Contains(pending, m.Version) {
			continue
		}
		f, err := readMigration(m)
		if err != nil {
			if isParseError(err) {
				r.add(SeverityViolation, "migration_directive_invalid", m.Version, 1, err.Error()+"; fix the migration file")
				continue
			}
			return err
		}
		switch {
		case m.Down == "" && f.ForwardOnly == "":
			r.add(SeverityViolation, "rollback_boundary_missing", m.Version, 1,
				fmt.Sprintf("pending migration has no rollback boundary: add %s_%s%s.down.sql that undoes its structure, or a line \"-- %s: <reason>\" in its up file saying why it cannot be rolled back / 迁移缺少回滚边界：请添加 down 文件，或在 up 文件中用 forward_only 注释写明不可回滚的原因",
					m.Version, m.Name, txInfix(m), ForwardOnlyDirective))
		case m.Down != "" && f.ForwardOnly != "":
			r.add(SeverityViolation, "rollback_boundary_ambiguous", m.Version, 1,
				fmt.Sprintf("pending migration has a down file (%s) and says it is forward-only; keep one of the two", m.Down))
		}
		if bad, ok := downRefused(m); ok {
			r.Findings = append(r.Findings, bad)
		}
		if len(f.Writes) > 0 {
			kinds := slices.Compact(slices.Sorted(slices.Values(f.Writes)))
			r.add(SeverityViolation, "migration_writes_data", m.Version, int64(len(f.Writes)),
				fmt.Sprintf("pending migration changes rows (%s); migrations are structure-only: move the data change to a backfill (`migrate backfill`)",
					strings.ToUpper(strings.Join(kinds, ", "))))
		}
		for _, d := range f.Drops {
			has, err := holdsRows(ctx, db, d)
			if err != nil {
				return err
			}
			if has {
				r.add(SeverityViolation, "drop_nonempty", d.Object(), 1,
					fmt.Sprintf("pending migration %s drops it but the table holds rows; migrations never drop data: move the rows forward with a backfill and empty it first, or keep it", m.Version))
			}
		}
	}
	return nil
}

// parseError is a migration file release cannot read (a bad directive).
type parseError struct {
	file string
	err  error
}

func (e *parseError) Error() string { return e.file + ": " + e.err.Error() }

func isParseError(err error) bool {
	var pe *parseError
	return errors.As(err, &pe)
}

// readMigration reads and parses m's up file.
func readMigration(m migration) (sqlFile, error) {
	b, err := fs.ReadFile(m.fsys, m.Up)
	if err != nil {
		return sqlFile{}, fmt.Errorf("read %s: %w", m.Up, err)
	}
	f, err := parseSQLFile(string(b))
	if err != nil {
		return f, &parseError{file: m.Up, err: err}
	}
	return f, nil
}

// holdsRows reports whether the target exists and its table holds a row.
func holdsRows(ctx context.Context, db bun.IDB, d dropTarget) (bool, error) {
	var exists bool
	q := `SELECT to_regclass(?) IS NOT NULL`
	args := []any{quoteQualified(d.Table)}
	if d.Column != "" {
		q = `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(?) AND attname = ? AND attnum > 0 AND NOT attisdropped)`
		args = append(args, d.Column)
	}
	if err := db.QueryRowContext(ctx, q, args...).Scan(&exists); err != nil {
		return false, fmt.Errorf("look up %s: %w", d.Object(), err)
	}
	if !exists {
		return false, nil
	}
	var has bool
	if err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s LIMIT 1)`, quoteQualified(d.Table))).Scan(&has); err != nil {
		return false, fmt.Errorf("look for rows in %s: %w", d.Table, err)
	}
	return has, nil
}

// txInfix is ".tx" when m's up file runs in a transaction.
func txInfix(m migration) string {
	if strings.HasSuffix(m.Up, ".tx.up.sql") {
		return ".tx"
	}
	return ""
}
