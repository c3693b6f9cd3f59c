package release

import (
	"context"
	"database/sql"
	"fmt"
	"sort"

	"github.com/uptrace/bun"
)

// MinServerVersion is the oldest Postgres (server_version_num) supported.
const MinServerVersion = 130000

// Check is the pre-flight check. It passes on an empty database; otherwise
// it verifies that objects of applied migrations still match the snapshot,
// that no two migrations own the same object, that no object of a pending
// migration exists already, and that every invariant and every precondition
// of a pending migration counts zero offending rows. Undelivered outbox work
// is reported as warnings. It runs in a READ ONLY transaction and writes
// nothing. The error is for infrastructure failures only; violations are in
// the report.
func Check(ctx context.Context, db *bun.DB, sets []Set) (*Report, error) {
	r := &Report{Phase: "check", Findings: []Finding{}}
	err := db.RunInTx(ctx, &sql.TxOptions{ReadOnly: true}, func(ctx context.Context, tx bun.Tx) error {
		st, err := inspect(ctx, tx, sets, r)
		if err != nil {
			return err
		}
		for _, v := range r.Pending {
			for _, obj := range st.man.Created(v) {
				def, err := Definition(ctx, tx, obj)
				if err != nil {
					return err
				}
				if def != "" {
					r.add(SeverityViolation, "object_exists", obj, 1,
						fmt.Sprintf("pending migration %s creates it but it exists already; drop the stray object or record the migration", v))
				}
			}
		}
		if err := checkPending(ctx, tx, sets, r.Pending, r); err != nil {
			return err
		}
		return runRules(ctx, tx, sets, r, st, false)
	})
	if err != nil {
		return nil, fmt.Errorf("pre-flight check: %w", err)
	}
	return r, nil
}

// state is what inspect learned about the database.
type state struct {
	man     Manifest
	applied map[string]bool
}

// inspect fills the version, applied/pending lists, ownership conflicts,
// unknown applied migrations and schema drift of applied migrations.
func inspect(ctx context.Context, db bun.IDB, sets []Set, r *Report) (state, error) {
	var st state
	if err := db.QueryRowContext(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&r.ServerVersion); err != nil {
		return st, fmt.Errorf("read server version: %w", err)
	}
	if r.ServerVersion < MinServerVersion {
		r.add(SeverityViolation, "server_version", "server_version_num", int64(r.ServerVersion),
			fmt.Sprintf("Postgres %d or newer is required", MinServerVersion/10000))
	}
	migs, err := listMigrations(sets)
	if err != nil {
		return st, err
	}
	if st.man, err = BuildManifest(sets); err != nil {
		return st, err
	}
	st.man.conflicts(r)
	if st.applied, err = appliedVersions(ctx, db); err != nil {
		return st, err
	}
	known := map[string]bool{}
	r.Applied, r.Pending = []string{}, []string{}
	for _, m := range migs {
		known[m.Version] = true
		if st.applied[m.Version] {
			r.Applied = append(r.Applied, m.Version)
		} else {
			r.Pending = append(r.Pending, m.Version)
		}
	}
	var unknown []string
	for v := range st.applied {
		if !known[v] {
			unknown = append(unknown, v)
		}
	}
	sort.Strings(unknown)
	for _, v := range unknown {
		r.add(SeverityViolation, "unknown_applied_migration", v, 1,
			"the database has a migration this binary does not know; run the migrate binary of the newer release")
	}
	return st, drift(ctx, db, sets, st.applied, r)
}

// drift compares every object of an applied migration with its snapshot.
func drift(ctx context.Context, db bun.IDB, sets []Set, applied map[string]bool, r *Report) error {
	for _, s := range sets {
		snap, err := loadSnapshot(s)
		if err != nil {
			return err
		}
		versions := make([]string, 0, len(snap))
		for v := range snap {
			versions = append(versions, v)
		}
		sort.Strings(versions)
		for _, v := range versions {
			if !applied[v] {
				continue
			}
			objs := make([]string, 0, len(snap[v]))
			for o := range snap[v] {
				objs = append(objs, o)
			}
			sort.Strings(objs)
			for _, obj := range objs {
				got, err := Definition(ctx, db, obj)
				if err != nil {
					return err
				}
				switch {
				case got == "":
					r.add(SeverityViolation, "schema_missing", obj, 1,
						fmt.Sprintf("created by applied migration %s but missing; restore it with the migration's definition", v))
				case got != snap[v][obj]:
					r.add(SeverityViolation, "schema_drift", obj, 1,
						fmt.Sprintf("differs from the definition of applied migration %s; restore it before releasing", v))
				}
			}
		}
	}
	return nil
}

// runRules counts offending rows for invariants and, unless postFlight, for
// the preconditions of pending migrations. An invariant runs only once the
// migration creating its table is applied (a stray table of the same name
// is reported by Check as object_exists instead).
func runRules(ctx context.Context, db bun.IDB, sets []Set, r *Report, st state, postFlight bool) error {
	for _, s := range sets {
		for _, rule := range s.Rules {
			if rule.Before != "" && (postFlight || st.applied[rule.Before]) {
				continue
			}
			if owners := st.man.Owners(ObjectKey(KindTable, rule.Table)); rule.Before == "" && len(owners) > 0 && !st.applied[owners[0]] {
				continue
			}
			ok, err := tableExists(ctx, db, rule.Table)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			n, err := countRows(ctx, db, rule.SQL)
			if err != nil {
				return fmt.Errorf("rule %s: %w", rule.Name, err)
			}
			if n == 0 {
				continue
			}
			sev, msg := SeverityViolation, rule.Message
			if rule.Warn {
				sev = SeverityWarning
			}
			if rule.Before != "" {
				msg = fmt.Sprintf("precondition of pending migration %s: %s", rule.Before, msg)
			}
			r.add(sev, rule.Name, rule.Table, n, msg)
		}
	}
	return nil
}
