package main

import (
	"bytes"
	"context"
	"database/sql"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/contracttests/testinfra"
)

// migrateCLIWith is migrateCLI with backfills and a deadline, so a
// migration that would wait forever fails the test instead of hanging it.
func migrateCLIWith(t *testing.T, db *testinfra.DB, sets []release.Set, bfs []release.Backfill, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return db.URL
		}
		return ""
	}
	code := runWith(ctx, args, getenv, &out, &errb, sets, bfs)
	return result{code, out.String(), errb.String()}
}

// blockTable opens a transaction that reads table and keeps it open (a
// long report, a stuck session): its ACCESS SHARE lock blocks any ALTER.
func blockTable(t *testing.T, db *bun.DB, table string) *sql.Tx {
	t.Helper()
	tx, err := db.DB.BeginTx(context.Background(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	_, err = tx.Exec(`SELECT count(*) FROM ` + table)
	require.NoError(t, err)
	return tx
}

func busySet() release.Set {
	return release.Set{Name: "test/busy", FS: fstest.MapFS{
		"20990105000001_add_busy_note.tx.up.sql":   {Data: []byte("-- migrate:lock_timeout=100ms\nALTER TABLE tb_test_busy ADD COLUMN note text NULL;\n")},
		"20990105000001_add_busy_note.tx.down.sql": {Data: []byte("-- migrate:lock_timeout=100ms\nALTER TABLE tb_test_busy DROP COLUMN note;\n")},
	}}
}

// A migration that cannot get its lock gives up after lock_timeout, is
// retried a bounded number of times, then fails clearly: exit 3, code
// lock_timeout, the migration version, nothing applied or recorded.
func TestMigrationLockTimeoutIsRetriedThenFails(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	exec(t, db.Bun, `CREATE TABLE tb_test_busy (id int PRIMARY KEY)`)
	blockTable(t, db.Bun, "tb_test_busy")
	sets := append(foundation(), busySet())

	start := time.Now()
	r := migrateCLIWith(t, db, sets, backfills(), "up", "--json", "--lock-tries", "3", "--lock-backoff", "50ms")
	require.Equal(t, exitApplyFailed, r.code, r.stdout+r.stderr)
	require.GreaterOrEqual(t, time.Since(start), 3*100*time.Millisecond+150*time.Millisecond, "3 tries of 100ms with 50ms+100ms pauses")
	require.Contains(t, r.stdout, `"code":"lock_timeout"`)
	require.Contains(t, r.stdout, `"version":"20990105000001"`)
	require.Contains(t, r.stdout, `"tries":3`)
	require.Contains(t, r.stderr, "migration 20990105000001: lock_timeout")
	require.Zero(t, count(t, db.Bun, `SELECT count(*) FROM pg_attribute WHERE attrelid = 'tb_test_busy'::regclass AND attname = 'note'`))
	require.Zero(t, count(t, db.Bun, `SELECT count(*) FROM bun_migrations WHERE name = '20990105000001'`))

	r = migrateCLIWith(t, db, sets, backfills(), "up", "--lock-tries", "1")
	require.Equal(t, exitApplyFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "migration 20990105000001: lock_timeout", "text output names the code and version too")
}

// When the blocker commits while the migration is retrying, the migration
// applies and is recorded.
func TestMigrationLockTimeoutRetrySucceedsWhenBlockerCommits(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	exec(t, db.Bun, `CREATE TABLE tb_test_busy (id int PRIMARY KEY)`)
	blocker := blockTable(t, db.Bun, "tb_test_busy")
	time.AfterFunc(400*time.Millisecond, func() { _ = blocker.Commit() })

	r := migrateCLIWith(t, db, append(foundation(), busySet()), backfills(), "up", "--lock-tries", "6", "--lock-backoff", "100ms")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "applied: 20990105000001")
	require.EqualValues(t, 1, count(t, db.Bun, `SELECT count(*) FROM pg_attribute WHERE attrelid = 'tb_test_busy'::regclass AND attname = 'note'`))
	require.EqualValues(t, 1, count(t, db.Bun, `SELECT count(*) FROM bun_migrations WHERE name = '20990105000001'`))
	require.Equal(t, exitOK, migrateCLI(t, db, append(foundation(), busySet()), "status").code)
}

// statement_timeout bounds each migration (a directive overrides the default)
// and a bad directive fails the pre-flight check.
func TestMigrationStatementTimeoutAndDirectives(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	slow := release.Set{Name: "test/slow", FS: fstest.MapFS{
		"20990106000001_slow.tx.up.sql": {Data: forwardOnly("-- migrate:statement_timeout=200ms\nCREATE TABLE tb_test_slow (id int PRIMARY KEY);\nSELECT pg_sleep(5);\n")},
	}}
	r := migrateCLIWith(t, db, append(foundation(), slow), backfills(), "up", "--json")
	require.Equal(t, exitApplyFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, `"code":"statement_timeout"`)
	require.Zero(t, count(t, db.Bun, `SELECT count(*) FROM pg_tables WHERE tablename = 'tb_test_slow'`))

	bad := release.Set{Name: "test/bad", FS: fstest.MapFS{
		"20990106000002_bad.tx.up.sql": {Data: []byte("-- migrate:lock_timeout=soon\nCREATE TABLE tb_test_bad (id int PRIMARY KEY);\n")},
	}}
	r = migrateCLIWith(t, db, append(foundation(), bad), backfills(), "check")
	require.Equal(t, exitCheckFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "migration_directive_invalid 20990106000002")
}

const plantedCard = "card-4111111111111111"

// cardBackfill copies tb_test_card into a bigint column: it fails on the
// planted value, as a backfill meeting unexpected data does.
func cardBackfill() release.Backfill {
	return release.Backfill{Name: "copy-card", Batch: release.ByID(func(ctx context.Context, tx bun.Tx, after int64, limit int) (int64, int, error) {
		res, err := tx.ExecContext(ctx, `INSERT INTO tb_test_card_num SELECT id, card::bigint FROM tb_test_card WHERE id > ? ORDER BY id LIMIT ?`, after, limit)
		if err != nil {
			return 0, 0, err
		}
		n, _ := res.RowsAffected()
		return after + n, int(n), nil
	})}
}

// A failing migration or backfill reports the SQLSTATE, safe names and the
// migration version; the row value in Postgres's message is printed nowhere
// (text, --json, stdout, stderr, logs).
func TestFailuresPrintNoRowValues(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	exec(t, db.Bun, `CREATE TABLE tb_test_card (id bigint PRIMARY KEY, card text NOT NULL)`)
	exec(t, db.Bun, `CREATE TABLE tb_test_card_num (id bigint PRIMARY KEY, card bigint NOT NULL)`)
	exec(t, db.Bun, `INSERT INTO tb_test_card VALUES (1, '4111'), (2, '`+plantedCard+`')`)
	set := release.Set{Name: "test/card", FS: fstest.MapFS{
		"20990107000001_card_bigint.tx.up.sql": {Data: forwardOnly("-- migrate:allow lint_column_type_change: test table\nALTER TABLE tb_test_card ALTER COLUMN card TYPE bigint USING card::bigint;")},
	}}
	sets := append(foundation(), set)
	bfs := []release.Backfill{cardBackfill()}

	for _, args := range [][]string{{"up"}, {"up", "--json"}, {"backfill", "copy-card"}, {"backfill", "copy-card", "--json"}} {
		r := migrateCLIWith(t, db, sets, bfs, args...)
		require.Equal(t, exitApplyFailed, r.code, "%v: %s%s", args, r.stdout, r.stderr)
		out := r.stdout + r.stderr
		require.NotContains(t, out, "4111111111111111", "%v leaked a row value: %s", args, out)
		require.NotContains(t, out, "invalid input syntax", "%v printed the server's message: %s", args, out)
		require.Contains(t, out, "22P02", "%v names the SQLSTATE", args)
		if args[0] == "up" {
			require.Contains(t, out, "20990107000001", "%v names the migration", args)
		}
	}
}

// down runs under the same lock_timeout: a rollback blocked by a long
// transaction fails fast (exit 3, SQLSTATE 55P03) instead of queueing every
// writer of the table behind it, and stays recorded as applied.
func TestDownHonoursLockTimeout(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	exec(t, db.Bun, `CREATE TABLE tb_test_busy (id int PRIMARY KEY)`)
	sets := append(foundation(), busySet())
	require.Equal(t, exitOK, migrateCLIWith(t, db, sets, backfills(), "up").code)
	blockTable(t, db.Bun, "tb_test_busy")

	start := time.Now()
	r := migrateCLIWith(t, db, sets, backfills(), "down", "--to", "20261201000009")
	require.Equal(t, exitApplyFailed, r.code, r.stdout+r.stderr)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Contains(t, r.stderr, "SQLSTATE 55P03 lock_not_available")
	require.EqualValues(t, 1, count(t, db.Bun, `SELECT count(*) FROM bun_migrations WHERE name = '20990105000001'`))
}
