package release

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
)

// Change is what one statement or migration did to the catalog.
type Change struct {
	Created map[string]Object `json:"creates"`
	Altered map[string]Object `json:"alters"`
	Dropped []string          `json:"drops"`
}

func newChange() Change {
	return Change{Created: map[string]Object{}, Altered: map[string]Object{}, Dropped: []string{}}
}

// Step is one migration as rehearsed.
type Step struct {
	Version string `json:"-"`
	Name    string `json:"name"`
	Set     string `json:"-"`
	Change
	// existed are the tables that existed before the migration ran.
	existed map[string]bool
	// findings are the lint, unsupported-object and failure findings.
	findings []Finding
	// touched are the objects any of its statements created, altered or
	// dropped (see resume.go).
	touched map[string]bool
}

// Rehearsal is every migration of the sets applied, statement by
// statement, to an empty scratch schema inside a transaction that is
// always rolled back: the catalog diff of each statement is what the
// migration owns, so ownership and the expected schema come from Postgres
// itself, not from parsing SQL. A rehearsal writes nothing.
type Rehearsal struct {
	Steps []Step
	// Complete is false when a statement failed; later migrations were not
	// rehearsed (their findings say so).
	Complete bool
}

// Rehearse runs the rehearsal of sets on db.
func Rehearse(ctx context.Context, db *bun.DB, sets []Set) (*Rehearsal, error) {
	migs, err := listMigrations(sets)
	if err != nil {
		return nil, err
	}
	reh := &Rehearsal{Complete: true}
	// One snapshot for the whole rehearsal: what other sessions commit
	// meanwhile (a role created elsewhere in the cluster, say) is never
	// counted as a statement's effect.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return nil, fmt.Errorf("rehearse migrations: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var live string
	if err := tx.QueryRowContext(ctx, "SELECT current_schema()").Scan(&live); err != nil {
		return nil, fmt.Errorf("rehearse migrations: read the current schema: %w", err)
	}
	schema := "release_rehearsal_" + randomHex()
	for _, q := range []string{
		"SET LOCAL lock_timeout = '5s'",
		"SET LOCAL statement_timeout = '60s'",
		"CREATE SCHEMA " + schema,
		"SET LOCAL search_path TO " + schema,
	} {
		if _, err := tx.Tx.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("rehearse migrations: prepare scratch schema: %w", err)
		}
	}
	cat, err := ReadCatalog(ctx, tx)
	if err != nil {
		return nil, err
	}
	counts, err := untracked(ctx, tx)
	if err != nil {
		return nil, err
	}
	external := map[string]bool{} // live tables copied into the scratch schema
	for _, m := range migs {
		step := Step{Version: m.Version, Name: m.Name, Set: m.Set, Change: newChange(), existed: map[string]bool{}}
		for key := range cat {
			if strings.HasPrefix(key, KindTable+":") {
				step.existed[strings.TrimPrefix(key, KindTable+":")] = true
			}
		}
		if !reh.Complete {
			step.findings = append(step.findings, Finding{Severity: SeverityViolation, Code: "migration_not_rehearsed", Object: m.Version, Count: 1,
				Message: "not rehearsed because an earlier migration failed in the rehearsal; fix that one first"})
			reh.Steps = append(reh.Steps, step)
			continue
		}
		b, err := fs.ReadFile(m.fsys, m.Up)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", m.Up, err)
		}
		for _, st := range SplitStatements(string(b)) {
			if isCopy(st.SQL) {
				continue // COPY waits for the client's data; it changes no catalog (migration_writes_data refuses it)
			}
			if f, bad := statementRefused(m, st, live); bad {
				step.findings = append(step.findings, f)
				continue
			}
			next, nextCounts, err := rehearseStatement(ctx, tx, st)
			for copied := 0; err != nil && copied < maxExternalTables; copied++ {
				// A table no migration creates (made by an older tool) is
				// copied, structure only, from the live schema; it then
				// belongs to the baseline, not to the migration.
				table, cerr := copyExternalTable(ctx, tx, live, err)
				if cerr != nil {
					return nil, cerr
				}
				if table == "" {
					break
				}
				step.existed[table], external[table] = true, true
				if cat, cerr = ReadCatalog(ctx, tx); cerr != nil {
					return nil, cerr
				}
				if counts, cerr = untracked(ctx, tx); cerr != nil {
					return nil, cerr
				}
				next, nextCounts, err = rehearseStatement(ctx, tx, st)
			}
			if err != nil {
				var pgErr *pgconn.PgError
				if !errors.As(err, &pgErr) {
					return nil, fmt.Errorf("rehearse migration %s: %w", m.Version, err)
				}
				if t, ok := dupOnExternal(pgErr, cat, external); ok {
					// The live copy of a table no migration creates already
					// reflects this statement (the object exists, or is
					// gone): the migration was applied. For a pending one
					// the table is not what the migration expects.
					step.findings = append(step.findings, Finding{Severity: SeverityViolation, Code: "external_table_mismatch", Object: m.Version, Count: 1,
						Message: fmt.Sprintf("line %d does not apply to table %s (created by no migration) as it is now (%s); make the table match what the migration expects, or record the migration", st.Line, t, safePgError(pgErr))})
					continue
				}
				step.findings = append(step.findings, failureFinding(m, st, pgErr, cat))
				reh.Complete = false
				break
			}
			d := diff(cat, next)
			step.touch(d)
			if kinds := changedKinds(counts, nextCounts); len(kinds) > 0 {
				step.findings = append(step.findings, Finding{Severity: SeverityViolation, Code: "unsupported_object", Object: m.Version, Count: int64(len(kinds)),
					Message: fmt.Sprintf("line %d changes %s, which the release step does not track; use tables, columns, constraints, indexes, triggers, policies, sequences, functions, types or views, or extend release/catalog.go / 第 %d 行修改了发布步骤无法跟踪的对象（%s）",
						st.Line, strings.Join(kinds, ", "), st.Line, strings.Join(kinds, ", "))})
			}
			step.findings = append(step.findings, lint(m, st, step.existed, cat, d)...)
			step.merge(d)
			cat, counts = next, nextCounts
		}
		reh.Steps = append(reh.Steps, step)
	}
	return reh, nil
}

// maxExternalTables bounds the live tables one statement may pull in.
const maxExternalTables = 20

// copyExternalTable handles an undefined_table error whose table exists in
// the live schema: it creates the table in the scratch schema with LIKE
// ... INCLUDING ALL and returns its name ("" when err is something else).
func copyExternalTable(ctx context.Context, tx bun.Tx, live string, err error) (string, error) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
		return "", nil
	}
	m := reQuotedName.FindStringSubmatch(pgErr.Message)
	if m == nil {
		return "", nil
	}
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_class WHERE relname = ? AND relnamespace = ?::regnamespace AND relkind IN ('r', 'p'))`,
		m[1], live).Scan(&exists); err != nil {
		return "", fmt.Errorf("rehearse migrations: look up live table %s: %w", m[1], err)
	}
	if !exists {
		return "", nil
	}
	q := fmt.Sprintf("CREATE TABLE %s (LIKE %s.%s INCLUDING ALL)", pgIdent(m[1]), pgIdent(live), pgIdent(m[1]))
	if _, err := tx.Tx.ExecContext(ctx, q); err != nil {
		return "", fmt.Errorf("rehearse migrations: copy the structure of live table %s: %w", m[1], err)
	}
	return m[1], nil
}

// dupOnExternal reports a duplicate- or undefined-object error about a
// table no migration creates (or an object on it), and that table.
func dupOnExternal(pgErr *pgconn.PgError, cat Catalog, external map[string]bool) (string, bool) {
	if !isDuplicate(pgErr.Code) || len(external) == 0 {
		return "", false
	}
	names := reQuotedName.FindAllStringSubmatch(pgErr.Message, -1)
	for _, n := range names {
		if external[n[1]] {
			return n[1], true
		}
	}
	if len(names) == 0 {
		return "", false
	}
	for k, o := range cat {
		_, name, _ := strings.Cut(k, ":")
		if external[o.Table] && (name == names[0][1] || strings.HasSuffix(name, "."+names[0][1])) {
			return o.Table, true
		}
	}
	return "", false
}

// isDuplicate reports the SQLSTATEs of an object that exists already, or
// is missing.
func isDuplicate(code string) bool {
	switch code {
	case "42701", "42P07", "42710", "42723", // duplicate column, relation, object, function
		"42703", "42704": // undefined column, object
		return true
	}
	return false
}

// reConcurrently finds CONCURRENTLY in index statements: it cannot run in
// the rehearsal's transaction, and the catalog effect is the same without.
var reConcurrently = regexp.MustCompile(`(?i)\b(index)\s+concurrently\b`)

// statementRefused reports a statement the rehearsal must not run, or
// that up could not run: one naming the live schema (it would touch live
// tables inside check), or CONCURRENTLY in a .tx file (refused inside the
// migration's transaction).
func statementRefused(m migration, st Statement, live string) (Finding, bool) {
	norm := strings.Join(splitStatements(st.SQL), ";")
	if strings.Contains(norm, strings.ToLower(live)+".") || strings.Contains(norm, `"`+live+`".`) {
		return Finding{Severity: SeverityViolation, Code: "migration_schema_qualified", Object: m.Version, Count: 1,
			Message: fmt.Sprintf("line %d names schema %s; write unqualified names (the search_path decides), so the migration applies to the schema it is released to / 第 %d 行写了 schema 前缀，请使用不带 schema 的名称", st.Line, live, st.Line)}, true
	}
	if reConcurrently.MatchString(st.SQL) && strings.HasSuffix(m.Up, ".tx.up.sql") {
		return Finding{Severity: SeverityViolation, Code: "concurrently_in_tx", Object: m.Version, Count: 1,
			Message: fmt.Sprintf("line %d uses CONCURRENTLY in a .tx migration, where Postgres refuses it; move it to a migration file without .tx / 第 %d 行在事务迁移中使用 CONCURRENTLY，请移到不带 .tx 的迁移文件", st.Line, st.Line)}, true
	}
	return Finding{}, false
}

// isCopy reports a COPY statement.
func isCopy(sql string) bool {
	f := strings.Fields(sql)
	return len(f) > 0 && strings.EqualFold(f[0], "copy")
}

// rehearseStatement runs one statement under a savepoint and reads the
// catalog after it.
func rehearseStatement(ctx context.Context, tx bun.Tx, st Statement) (Catalog, map[string]int64, error) {
	if _, err := tx.Tx.ExecContext(ctx, "SAVEPOINT release_statement"); err != nil {
		return nil, nil, err
	}
	if _, err := tx.Tx.ExecContext(ctx, reConcurrently.ReplaceAllString(st.SQL, "$1")); err != nil {
		if _, rbErr := tx.Tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT release_statement"); rbErr != nil {
			return nil, nil, rbErr
		}
		return nil, nil, err
	}
	cat, err := ReadCatalog(ctx, tx)
	if err != nil {
		return nil, nil, err
	}
	counts, err := untracked(ctx, tx)
	return cat, counts, err
}

// merge folds the change of one statement into the step: an object
// created and then altered in the same migration is simply created, and
// one dropped and created again (DROP VIEW + CREATE VIEW) is altered, as
// CREATE OR REPLACE would have.
func (s *Step) merge(d Change) {
	for k, o := range d.Created {
		if i := slices.Index(s.Dropped, k); i >= 0 {
			s.Dropped = slices.Delete(s.Dropped, i, i+1)
			s.Altered[k] = o
			continue
		}
		s.Created[k] = o
	}
	for k, o := range d.Altered {
		if _, mine := s.Created[k]; mine {
			s.Created[k] = o
		} else {
			s.Altered[k] = o
		}
	}
	for _, k := range d.Dropped {
		if _, mine := s.Created[k]; mine {
			delete(s.Created, k)
			continue
		}
		delete(s.Altered, k)
		s.Dropped = append(s.Dropped, k)
	}
	sort.Strings(s.Dropped)
}

// diff lists what changed from before to after. Objects of a dropped table
// are implied by the table and not listed.
func diff(before, after Catalog) Change {
	d := newChange()
	for k, o := range after {
		b, ok := before[k]
		switch {
		case !ok:
			d.Created[k] = o
		case b != o:
			d.Altered[k] = o
		}
	}
	for k, o := range before {
		if _, ok := after[k]; ok {
			continue
		}
		if t := o.Table; t != "" && !strings.HasPrefix(k, KindTable+":") {
			if _, gone := after[ObjectKey(KindTable, t)]; !gone {
				continue
			}
		}
		d.Dropped = append(d.Dropped, k)
	}
	sort.Strings(d.Dropped)
	return d
}

// reQuotedName finds the object a duplicate-object error names; the
// message of these SQLSTATEs carries identifiers only, never row values.
var reQuotedName = regexp.MustCompile(`"([^"]+)"`)

// failureFinding reports a statement that failed in the rehearsal. A
// duplicate object is an ownership conflict: another migration created it.
func failureFinding(m migration, st Statement, pgErr *pgconn.PgError, cat Catalog) Finding {
	switch pgErr.Code {
	case "42P07", "42710", "42723", "42701": // duplicate relation, object, function, column
		if name := reQuotedName.FindStringSubmatch(pgErr.Message); name != nil {
			obj := m.Version
			for _, k := range cat.Keys() {
				if _, n, _ := strings.Cut(k, ":"); n == name[1] || strings.HasSuffix(n, "."+name[1]) || strings.HasPrefix(n, name[1]+"(") {
					obj = k
					break
				}
			}
			return Finding{Severity: SeverityViolation, Code: "ownership_conflict", Object: obj, Count: 1,
				Message: fmt.Sprintf("migration %s (line %d) creates it again; one migration owns an object, others may only depend on it", m.Version, st.Line)}
		}
	}
	return Finding{Severity: SeverityViolation, Code: "migration_rehearsal_failed", Object: m.Version, Count: 1,
		Message: fmt.Sprintf("line %d fails on an empty schema: %s; fix the migration before releasing", st.Line, safePgError(pgErr))}
}

// safePgError keeps what cannot carry row values: the SQLSTATE and the
// names of the objects involved.
func safePgError(pgErr *pgconn.PgError) string {
	out := "SQLSTATE " + pgErr.Code
	for _, n := range []struct{ k, v string }{{"table", pgErr.TableName}, {"column", pgErr.ColumnName}, {"constraint", pgErr.ConstraintName}} {
		if n.v != "" {
			out += " " + n.k + " " + n.v
		}
	}
	return out
}

// Expected folds the changes of the applied migrations, in version order:
// the catalog the live schema must match.
func (r *Rehearsal) Expected(applied map[string]bool) Catalog {
	cat := Catalog{}
	for _, s := range r.Steps {
		if !applied[s.Version] {
			continue
		}
		for k, o := range s.Created {
			cat[k] = o
		}
		for k, o := range s.Altered {
			cat[k] = o
		}
		for _, k := range s.Dropped {
			delete(cat, k)
			if t, ok := strings.CutPrefix(k, KindTable+":"); ok {
				for k2, o := range cat {
					if o.Table == t {
						delete(cat, k2)
					}
				}
			}
		}
	}
	return cat
}

// Step returns the step of version, or nil.
func (r *Rehearsal) Step(version string) *Step {
	for i := range r.Steps {
		if r.Steps[i].Version == version {
			return &r.Steps[i]
		}
	}
	return nil
}

func randomHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
