package release

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/uptrace/bun"
)

// MinServerVersion is the oldest Postgres (server_version_num) supported.
const MinServerVersion = 130000

// Check is the pre-flight check. It rehearses every migration on an empty
// scratch schema (Rehearse) to learn what each one owns, then, in a READ
// ONLY transaction, verifies that the live schema matches what the applied
// migrations produce (nothing missing, changed or extra on an owned table),
// that no index or constraint on an owned table is invalid, that no object
// of a pending migration exists already, that pending migrations pass the
// lint, and that every invariant and every precondition of a pending
// migration counts zero offending rows. Undelivered outbox work and
// unfinished tasks are reported as warnings (see CheckWith for the strict
// mode). It writes nothing. The error is for infrastructure failures only;
// violations are in the report.
func Check(ctx context.Context, db *bun.DB, sets []Set) (*Report, error) {
	return CheckWith(ctx, db, sets, CheckOptions{})
}

// CheckOptions tune Check.
type CheckOptions struct {
	// Strict turns the findings of Rules marked Strict (outbox_undelivered,
	// outbox_expired_leases, outbox_long_lease, task_unfinished,
	// task_lease_expired) from warnings into violations, for a release
	// with producers stopped and the relay and workers drained
	// (docs/release-runbook.md, "Strict pre-check"). The default (false) suits a release under live traffic,
	// where such work is normal and resumes after the release.
	Strict bool
}

// CheckWith is Check with options.
func CheckWith(ctx context.Context, db *bun.DB, sets []Set, opts CheckOptions) (*Report, error) {
	reh, err := Rehearse(ctx, db, sets)
	if err != nil {
		return nil, fmt.Errorf("pre-flight check: %w", err)
	}
	return check(ctx, db, sets, reh, opts)
}

// check is Check on a rehearsal already taken.
func check(ctx context.Context, db *bun.DB, sets []Set, reh *Rehearsal, opts CheckOptions) (*Report, error) {
	r := &Report{Phase: "check", Findings: []Finding{}}
	err := db.RunInTx(ctx, &sql.TxOptions{ReadOnly: true}, func(ctx context.Context, tx bun.Tx) error {
		st, err := inspect(ctx, tx, sets, reh, r)
		if err != nil {
			return err
		}
		expected := reh.Expected(st.applied)
		for _, v := range r.Pending {
			step := reh.Step(v)
			if step == nil {
				continue
			}
			for _, obj := range sortedKeys(step.Created) {
				if _, stray := st.live[obj]; stray && !st.unfinished[v] {
					if _, ok := expected[obj]; !ok {
						r.add(SeverityViolation, "object_exists", obj, 1,
							fmt.Sprintf("pending migration %s creates it but it exists already; drop the stray object or record the migration", v))
					}
				}
			}
			r.Findings = append(r.Findings, step.findings...)
		}
		if err := checkPending(ctx, tx, sets, r.Pending, r); err != nil {
			return err
		}
		return runRules(ctx, tx, sets, r, st, false, opts.Strict)
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
	live    Catalog
	// unfinished are the migrations without .tx that started and did not
	// finish (see resume.go).
	unfinished map[string]bool
}

// inspect fills the version, applied/pending lists, ownership conflicts,
// unknown applied migrations, rehearsal failures of applied migrations,
// schema drift and invalid objects of owned tables.
func inspect(ctx context.Context, db bun.IDB, sets []Set, reh *Rehearsal, r *Report) (state, error) {
	var st state
	if err := db.QueryRowContext(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&r.ServerVersion); err != nil {
		return st, fmt.Errorf("read server version: %w", err)
	}
	checkServerVersion(r)
	migs, err := listMigrations(sets)
	if err != nil {
		return st, err
	}
	st.man = reh.Manifest()
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
			if step := reh.Step(m.Version); step != nil {
				for _, f := range step.findings {
					if !strings.HasPrefix(f.Code, "lint_") && f.Code != "external_table_mismatch" {
						r.Findings = append(r.Findings, f) // a released migration that no longer replays
					}
				}
			}
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
	if st.live, err = ReadCatalog(ctx, db); err != nil {
		return st, err
	}
	if st.unfinished, err = unfinishedVersions(ctx, db); err != nil {
		return st, err
	}
	leftovers := drift(reh.Expected(st.applied), st.live, resumable(reh, st.unfinished, st.applied), r)
	reportUnfinished(r, leftovers, st.unfinished, st.applied)
	for _, s := range sets {
		if err := staleSnapshot(s, reh, r); err != nil {
			return st, err
		}
	}
	return st, nil
}

// checkServerVersion reports a server older than MinServerVersion.
func checkServerVersion(r *Report) {
	if r.ServerVersion < MinServerVersion {
		r.add(SeverityViolation, "server_version", "server_version_num", int64(r.ServerVersion),
			fmt.Sprintf("Postgres %d or newer is required", MinServerVersion/10000))
	}
}

// drift compares the live catalog with what the applied migrations
// produce. An owned table is one an applied migration created; every
// object on it must be expected, with the same definition. An object an
// unfinished migration touches (resumable: key -> version) is its leftover,
// not a finding; drift returns their number per version.
func drift(expected, live Catalog, resumable map[string]string, r *Report) map[string]int64 {
	left := map[string]bool{}
	leftover := func(k string) bool {
		_, ok := resumable[k]
		left[k] = left[k] || ok
		return ok
	}
	owned := map[string]bool{}
	for k := range expected {
		if t, ok := strings.CutPrefix(k, KindTable+":"); ok {
			owned[t] = true
		}
	}
	for _, k := range expected.Keys() {
		got, ok := live[k]
		switch {
		case (!ok || got.Def != expected[k].Def) && leftover(k):
		case !ok:
			r.add(SeverityViolation, "schema_missing", k, 1, "created by an applied migration but missing; restore it with the migration's definition")
		case got.Def != expected[k].Def:
			r.add(SeverityViolation, "schema_drift", k, 1, "differs from the definition the applied migrations produce; restore it before releasing")
		}
	}
	for _, k := range live.Keys() {
		got := live[k]
		if _, ok := expected[k]; ok || !owned[tableOf(k, got)] || leftover(k) {
			continue
		}
		r.add(SeverityViolation, "schema_extra", k, 1,
			"on an owned table but created by no migration; drop it, or add it in a migration of the set that owns the table")
	}
	for _, k := range live.Keys() {
		got := live[k]
		if !got.Invalid || !owned[tableOf(k, got)] || leftover(k) {
			continue
		}
		if strings.HasPrefix(k, KindIndex+":") {
			r.add(SeverityViolation, "index_invalid", k, 1,
				"index is INVALID or not ready (a failed CREATE INDEX CONCURRENTLY leaves one); drop it and create it again")
		} else {
			r.add(SeverityViolation, "constraint_not_validated", k, 1,
				"constraint is NOT VALID; validate it (ALTER TABLE ... VALIDATE CONSTRAINT) in a migration")
		}
	}
	leftovers := map[string]int64{}
	for k, ok := range left {
		if ok {
			leftovers[resumable[k]]++
		}
	}
	return leftovers
}

// runRules counts offending rows for invariants and, unless postFlight, for
// the preconditions of pending migrations. An invariant runs only once the
// migration creating its table is applied (a stray table of the same name
// is reported by Check as object_exists instead). In strict mode a Strict
// rule's finding is a violation.
func runRules(ctx context.Context, db bun.IDB, sets []Set, r *Report, st state, postFlight, strict bool) error {
	for _, s := range sets {
		for _, rule := range append(append([]Rule(nil), s.Rules...), taskRules(s.TaskTables)...) {
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
			switch {
			case rule.Warn && rule.Strict && strict:
				msg = "strict pre-check: " + msg + "; stop the producers and let the relay and workers drain, then rerun (or release under live traffic without --strict / MIGRATE_STRICT)"
			case rule.Warn:
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

// taskRules are the pre-checks of a set's task tables: tasks still 待处理
// or 处理中 (status 1 or 2), and Processing tasks whose lease expired.
func taskRules(tables []string) []Rule {
	var out []Rule
	for _, t := range tables {
		q := pgIdent(t)
		out = append(out,
			Rule{Name: "task_unfinished", Table: t, Warn: true, Strict: true,
				SQL:     `SELECT count(*) FROM ` + q + ` WHERE status IN (1, 2)`,
				Message: "tasks pending or processing; keep the workers running across the release, they resume from their leases"},
			Rule{Name: "task_lease_expired", Table: t, Warn: true, Strict: true,
				SQL:     `SELECT count(*) FROM ` + q + ` WHERE status = 2 AND lease_expires_at < now()`,
				Message: "processing tasks whose lease expired (a worker died); the recovery sweep or a redelivery resumes them"},
		)
	}
	return out
}

// pgIdent quotes a table name for SQL.
func pgIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
