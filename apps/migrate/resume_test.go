package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/migrations"
	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/contracttests/testinfra"
)

// The partial lookups migration runs without a transaction (CREATE INDEX
// CONCURRENTLY), so a failure part way leaves what its finished statements
// did, and a half-built INVALID index. "Fix the cause, rerun the same
// command": the next up recognises these leftovers as its own and reruns
// the migration from the top, which rebuilds them.

const partialLookups = "20261201000009"

// partialLookupsValid counts the valid, ready partial lookup indexes.
func partialLookupsValid(t *testing.T, db *testinfra.DB) int64 {
	t.Helper()
	return count(t, db.Bun, `SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relname LIKE 'ix_outbox_event_%_unleased' AND i.indisvalid AND i.indisready`)
}

// lastBeforeNotBefore is the newest foundation migration before
// 20261201000012 (tb_outbox_event.not_before), whose down file alters
// tb_outbox_event and so is refused while the table holds rows.
const lastBeforeNotBefore = "20261201000011"

// foundationUntil is the foundation set cut after version last (and its
// schema.json entries with it): the partial-lookup tests roll 20261201000009
// back and forth on a table holding events, which a later migration that
// alters tb_outbox_event would refuse.
func foundationUntil(t *testing.T, last string) []release.Set {
	t.Helper()
	fsys := fstest.MapFS{}
	entries, err := fs.ReadDir(migrations.FS, ".")
	require.NoError(t, err)
	for _, e := range entries {
		b, err := fs.ReadFile(migrations.FS, e.Name())
		require.NoError(t, err)
		if e.Name() == release.SnapshotFile {
			var snap map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(b, &snap))
			for v := range snap {
				if v > last {
					delete(snap, v)
				}
			}
			b, err = json.MarshalIndent(snap, "", "  ")
			require.NoError(t, err)
		} else if e.Name()[:len(last)] > last {
			continue
		}
		fsys[e.Name()] = &fstest.MapFile{Data: b}
	}
	set := release.Foundation()
	set.FS = fsys
	return []release.Set{set}
}

// untilBeforeNotBefore is a migrated database with 20261201000012 rolled
// back while it is empty, and the set that stops before it.
func untilBeforeNotBefore(t *testing.T) (*testinfra.DB, []release.Set) {
	t.Helper()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	r := migrateCLIWith(t, db, foundation(), backfills(), "down", "--to", lastBeforeNotBefore)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	return db, foundationUntil(t, lastBeforeNotBefore)
}

// beforePartialLookups is a database holding events in every status, rolled
// back to just before the partial lookups.
func beforePartialLookups(t *testing.T) *testinfra.DB {
	t.Helper()
	db, sets := untilBeforeNotBefore(t)
	for status := 1; status <= 4; status++ {
		insertOutbox(t, db.Bun, status, 2)
	}
	r := migrateCLIWith(t, db, sets, backfills(), "down", "--to", "20261201000008")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	return db
}

// requireResumed runs up with the real foundation and checks that the
// partial lookups went in whole.
func requireResumed(t *testing.T, db *testinfra.DB, what string) {
	t.Helper()
	r := migrateCLIWith(t, db, foundationUntil(t, lastBeforeNotBefore), backfills(), "up")
	require.Equal(t, exitOK, r.code, "%s: %s%s", what, r.stdout, r.stderr)
	require.Contains(t, r.stdout, "applied: "+partialLookups+", 20261201000010, 20261201000011", what)
	require.Contains(t, r.stdout, "verify: OK", what)
	require.EqualValues(t, 3, partialLookupsValid(t, db), what)
	require.Zero(t, count(t, db.Bun, `SELECT count(*) FROM pg_class WHERE relname IN ('ix_outbox_event_aggregate', 'ix_outbox_event_resource', 'ix_outbox_event_correlation')`), what)
	require.EqualValues(t, 8, count(t, db.Bun, `SELECT count(*) FROM vw_outbox_event WHERE correlation_id = 'c'`), what)
}

// The case: CREATE INDEX CONCURRENTLY waits for a transaction that
// holds an old snapshot, hits lock_timeout (exit 3) and leaves the half-built
// ix_outbox_event_aggregate_unleased INVALID; once the blocker is gone the
// same command succeeds.
func TestUpResumesPartialLookupsAfterLockTimeoutInConcurrentBuild(t *testing.T) {
	t.Parallel()

	db := beforePartialLookups(t)
	blocker, err := db.Bun.DB.BeginTx(context.Background(), &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	require.NoError(t, err)
	t.Cleanup(func() { _ = blocker.Rollback() })
	_, err = blocker.Exec(`SELECT count(*) FROM tb_system_config`) // takes the snapshot
	require.NoError(t, err)

	r := migrateCLIWith(t, db, foundation(), backfills(), "up", "--lock-tries", "1")
	require.Equal(t, exitApplyFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "migration "+partialLookups+": lock_timeout")
	require.EqualValues(t, 1, count(t, db.Bun, `SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relname = 'ix_outbox_event_aggregate_unleased' AND NOT i.indisvalid`), "the failed build left an INVALID index")

	require.NoError(t, blocker.Rollback())
	r = migrateCLIWith(t, db, foundation(), backfills(), "check")
	require.Equal(t, exitOK, r.code, "check recognises the leftovers: %s%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "migration_unfinished "+partialLookups)
	requireResumed(t, db, "after the blocker went away")
}

// crashedFoundation is the foundation with the partial lookups cut after
// its first n statements and ended by failing, the way a crash at statement
// n+1 would leave it: last is a statement that passes the rehearsal (an
// empty table) and fails on the live rows.
func crashedFoundation(t *testing.T, n int, last string) []release.Set {
	t.Helper()
	fsys := fstest.MapFS{}
	entries, err := fs.ReadDir(migrations.FS, ".")
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() == release.SnapshotFile {
			continue // the cut migration no longer matches it
		}
		if e.Name()[:len(lastBeforeNotBefore)] > lastBeforeNotBefore {
			continue // see foundationUntil
		}
		b, err := fs.ReadFile(migrations.FS, e.Name())
		require.NoError(t, err)
		if strings.HasPrefix(e.Name(), partialLookups) && strings.HasSuffix(e.Name(), ".up.sql") {
			parts := append(partialLookupsStatements(t)[:n:n], last)
			b = []byte(strings.Join(parts, ";\n") + ";\n")
		}
		fsys[e.Name()] = &fstest.MapFile{Data: b}
	}
	set := release.Foundation()
	set.FS = fsys
	return []release.Set{set}
}

func partialLookupsStatements(t *testing.T) []string {
	t.Helper()
	b, err := fs.ReadFile(migrations.FS, partialLookups+"_partial_outbox_lookups.up.sql")
	require.NoError(t, err)
	var out []string
	for _, st := range release.SplitStatements(string(b)) {
		out = append(out, st.SQL)
	}
	return out
}

var reCreateIndex = regexp.MustCompile(`^CREATE INDEX CONCURRENTLY (\w+) ON tb_outbox_event`)

// A crash at every statement of the partial lookups, before the statement
// and (for each concurrent build) inside it, is resumed by the next up.
func TestUpResumesPartialLookupsAfterACrashAtEveryStatement(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()

	// Passes on the rehearsal's empty table, divides by zero on live rows.
	const crash = `SELECT 1 / (1 - least(1, (SELECT count(*) FROM tb_outbox_event)))::int`
	sts := partialLookupsStatements(t)
	// One database per cut statement, the cuts side by side: each runs
	// the release step (and its rehearsal) four times, one after another
	// took four and a half minutes.
	for n := 0; n <= len(sts); n++ {
		t.Run(fmt.Sprintf("statement %d", n+1), func(t *testing.T) {
			t.Parallel()
			db := beforePartialLookups(t)
			runCrashAt(t, db, n, sts, crash)
		})
	}
}

// runCrashAt crashes the partial lookups at statement n+1 (before it, and
// inside it when it builds an index) and requires the next up to resume.
func runCrashAt(t *testing.T, db *testinfra.DB, n int, sts []string, crash string) {
	t.Helper()
	lasts := map[string]string{fmt.Sprintf("crash before statement %d of %d", n+1, len(sts)): crash}
	if n < len(sts) {
		if m := reCreateIndex.FindStringSubmatch(sts[n]); m != nil {
			// The build itself fails on the live rows (duplicates) and
			// leaves an INVALID index of the same name, built differently.
			lasts[fmt.Sprintf("crash inside statement %d (%s)", n+1, m[1])] =
				`CREATE UNIQUE INDEX CONCURRENTLY ` + m[1] + ` ON tb_outbox_event (correlation_id)`
		}
	}
	for what, last := range lasts {
		r := migrateCLIWith(t, db, crashedFoundation(t, n, last), backfills(), "up")
		require.Equal(t, exitApplyFailed, r.code, "%s: %s%s", what, r.stdout, r.stderr)
		require.Contains(t, r.stderr, "migration "+partialLookups, what)

		requireResumed(t, db, what)
		r = migrateCLIWith(t, db, foundationUntil(t, lastBeforeNotBefore), backfills(), "down", "--to", "20261201000008")
		require.Equal(t, exitOK, r.code, "%s: %s%s", what, r.stdout, r.stderr)
	}
}
