package main

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/contracttests/testinfra"
)

// raceSet creates tb_test_race in one migration whose down file drops it,
// in a transaction (.tx) or statement by statement (no .tx).
func raceSet(tx bool) release.Set {
	ext := "."
	if tx {
		ext = ".tx."
	}
	return release.Set{Name: "test/race", FS: fstest.MapFS{
		"20990108000001_create_race" + ext + "up.sql":   {Data: []byte(`CREATE TABLE tb_test_race (id int, CONSTRAINT pk_test_race PRIMARY KEY (id));`)},
		"20990108000001_create_race" + ext + "down.sql": {Data: []byte(`DROP TABLE tb_test_race;`)},
	}}
}

// waitForLockWait returns once a session waits for a lock on table, or
// when done closes first (then it reports false): the wait is bounded by
// the other side's progress, not by a clock.
func waitForLockWait(t *testing.T, db *bun.DB, table string, done <-chan struct{}) bool {
	t.Helper()
	for {
		select {
		case <-done:
			return false
		default:
		}
		if count(t, db, `SELECT count(*) FROM pg_locks WHERE relation = to_regclass('`+table+`') AND NOT granted`) > 0 {
			return true
		}
	}
}

// A row committed while down runs (after its first look at the tables,
// before the drop) is never lost: down takes the lock the drop needs and
// looks again in the same transaction, then refuses (exit 6) and leaves
// the table and its row. Both for a down file in a transaction and for one
// without.
func TestDownNeverDropsARowCommittedDuringTheRollback(t *testing.T) {
	t.Parallel()

	for _, tx := range []bool{true, false} {
		name := map[bool]string{true: "tx", false: "no-tx"}[tx]
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
			sets := append(foundation(), raceSet(tx))
			require.Equal(t, exitOK, migrateCLIWith(t, db, sets, backfills(), "up").code)

			// A writer's insert is in flight: down's first look does not see it.
			writer, err := db.Bun.DB.BeginTx(context.Background(), nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = writer.Rollback() })
			_, err = writer.Exec(`INSERT INTO tb_test_race (id) VALUES (1)`)
			require.NoError(t, err)

			done := make(chan struct{})
			var r result
			go func() {
				defer close(done)
				r = migrateCLIWith(t, db, sets, backfills(), "down", "--to", "20261201000015", "--json")
			}()
			// Down reaches the table and waits for the writer's lock; the
			// writer commits.
			waited := waitForLockWait(t, db.Bun, "tb_test_race", done)
			require.NoError(t, writer.Commit())
			<-done
			require.True(t, waited, "down never waited for the writer's lock: %s %s", r.stdout, r.stderr)

			require.Equal(t, exitRefused, r.code, r.stdout+r.stderr)
			require.Contains(t, r.stdout, `"blocking":["tb_test_race"]`)
			require.EqualValues(t, 1, count(t, db.Bun, `SELECT count(*) FROM tb_test_race`), "the committed row survives")
			require.EqualValues(t, 1, count(t, db.Bun, `SELECT count(*) FROM bun_migrations WHERE name = '20990108000001'`), "still applied")
		})
	}
}

// A down file without .tx whose statements are separated by semicolons
// alone runs them one at a time, as up does: DROP INDEX CONCURRENTLY is
// refused inside the implicit transaction of a multi-statement string.
func TestDownWithoutTxSplitsStatementsLikeUp(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	set := release.Set{Name: "test/nontx", FS: fstest.MapFS{
		"20990109000001_create_nt.tx.up.sql":   {Data: []byte(`CREATE TABLE tb_test_nt (id int, a int, b int, CONSTRAINT pk_test_nt PRIMARY KEY (id));`)},
		"20990109000001_create_nt.tx.down.sql": {Data: []byte(`DROP TABLE tb_test_nt;`)},
		"20990109000002_index_nt.up.sql": {Data: []byte(`DROP INDEX CONCURRENTLY IF EXISTS ix_test_nt_a;
			CREATE INDEX CONCURRENTLY ix_test_nt_a ON tb_test_nt (a);
			DROP INDEX CONCURRENTLY IF EXISTS ix_test_nt_b;
			CREATE INDEX CONCURRENTLY ix_test_nt_b ON tb_test_nt (b);`)},
		"20990109000002_index_nt.down.sql": {Data: []byte(`DROP INDEX CONCURRENTLY IF EXISTS ix_test_nt_a;
			DROP INDEX CONCURRENTLY IF EXISTS ix_test_nt_b;`)},
	}}
	sets := append(foundation(), set)
	r := migrateCLIWith(t, db, sets, backfills(), "up")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.EqualValues(t, 2, count(t, db.Bun, `SELECT count(*) FROM pg_indexes WHERE indexname IN ('ix_test_nt_a', 'ix_test_nt_b')`))

	r = migrateCLIWith(t, db, sets, backfills(), "down", "--to", "20990109000001")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "rolled back: 20990109000002")
	require.Zero(t, count(t, db.Bun, `SELECT count(*) FROM pg_indexes WHERE indexname IN ('ix_test_nt_a', 'ix_test_nt_b')`))
	require.Zero(t, count(t, db.Bun, `SELECT count(*) FROM bun_migrations WHERE name = '20990109000002'`))
}

// What would still fail after the split: CONCURRENTLY in a .tx down file.
// check reports it for a pending migration, and down refuses it before
// rolling anything back.
func TestConcurrentlyInTxDownFileIsCaughtBeforeDown(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	files := func(down string) release.Set {
		return release.Set{Name: "test/txdown", FS: fstest.MapFS{
			"20990110000001_create_td.tx.up.sql":   {Data: []byte(`CREATE TABLE tb_test_td (id int, a int, CONSTRAINT pk_test_td PRIMARY KEY (id));`)},
			"20990110000001_create_td.tx.down.sql": {Data: []byte(`DROP TABLE tb_test_td;`)},
			"20990110000002_index_td.up.sql":       {Data: []byte(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_test_td_a ON tb_test_td (a);`)},
			"20990110000002_index_td.tx.down.sql":  {Data: []byte(down)},
			"20990110000003_add_td_b.tx.up.sql":    {Data: []byte(`ALTER TABLE tb_test_td ADD COLUMN b int NULL;`)},
			"20990110000003_add_td_b.tx.down.sql":  {Data: []byte(`ALTER TABLE tb_test_td DROP COLUMN b;`)},
		}}
	}
	bad := append(foundation(), files(`DROP INDEX CONCURRENTLY IF EXISTS ix_test_td_a;`))
	r := migrateCLIWith(t, db, bad, backfills(), "check")
	require.Equal(t, exitCheckFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "concurrently_in_tx 20990110000002")

	require.Equal(t, exitOK, migrateCLIWith(t, db, append(foundation(), files(`DROP INDEX IF EXISTS ix_test_td_a;`)), backfills(), "up").code)
	r = migrateCLIWith(t, db, bad, backfills(), "down", "--to", "20990110000001")
	require.Equal(t, exitApplyFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "20990110000002_index_td.tx.down.sql uses CONCURRENTLY")
	require.EqualValues(t, 3, count(t, db.Bun, `SELECT count(*) FROM bun_migrations WHERE name LIKE '2099011000000%'`), "nothing rolled back")
	require.EqualValues(t, 1, count(t, db.Bun, `SELECT count(*) FROM pg_attribute WHERE attrelid = 'tb_test_td'::regclass AND attname = 'b'`))
}
