package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/contracttests/testinfra"
)

// liveWrites is one INSERT per managed table (the foundation's and the
// test domain's), as the previous version of the service keeps issuing
// them while the release job runs. %[1]s is a unique token per insert.
var liveWrites = map[string]string{
	"tb_outbox_event": `INSERT INTO tb_outbox_event (event_id, event_type, payload_version, aggregate_type, aggregate_id,
		resource_type, resource_id, request_id, correlation_id, payload) VALUES (gen_random_uuid(), 'live.write', 1, 'a', '%[1]s', 'r', '1', 'q', 'c', '{}')`,
	"tb_system_config":       `INSERT INTO tb_system_config (config_key, config_value, value_type, module) VALUES ('live.writer.k%[1]s', '1', 'int', 'live')`,
	"tb_backfill_checkpoint": `INSERT INTO tb_backfill_checkpoint (name) VALUES ('live-%[1]s')`,
	"td_order":               `INSERT INTO td_order (id, owner, amount) VALUES ('o%[1]s', 'owner', 100)`,
	"td_effect":              `INSERT INTO td_effect (order_id, event_id, owner, amount) VALUES ('e%[1]s', 'e%[1]s', 'owner', 100)`,
}

// liveSet is a test-only set of n migrations, each adding a nullable column
// to a table the writers insert into (an ALTER TABLE under live traffic).
func liveSet(n int) release.Set {
	fsys := fstest.MapFS{}
	for i := 1; i <= n; i++ {
		fsys[fmt.Sprintf("209901020000%02d_add_live_note_%d.tx.up.sql", i, i)] = &fstest.MapFile{
			Data: forwardOnly(fmt.Sprintf(`ALTER TABLE tb_backfill_checkpoint ADD COLUMN live_note_%d text NULL;`, i))}
	}
	return release.Set{Name: "test/live", FS: fsys}
}

// startWriters inserts into every managed table until the returned stop is
// called; stop reports how many inserts committed and fails t on any error.
func startWriters(t *testing.T, db *testinfra.DB) (stop func() int64) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var done atomic.Int64
	errs := make(chan error, len(liveWrites))
	for table, q := range liveWrites {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				if _, err := db.Bun.ExecContext(ctx, fmt.Sprintf(q, fmt.Sprintf("%s%d", strings.ReplaceAll(table, "_", ""), i))); err != nil {
					if ctx.Err() == nil {
						errs <- fmt.Errorf("writer %s: %w", table, err)
					}
					return
				}
				done.Add(1)
			}
		})
	}
	var once sync.Once
	return func() int64 {
		once.Do(func() {
			cancel()
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
		return done.Load()
	}
}

// The release step holds under live traffic: while writers insert into
// every managed table, check and up succeed round after round, with and
// without a pending migration.
func TestCheckAndUpUnderLiveWrites(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{})
	r := migrateCLI(t, db, migrationSets(), "up")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)

	stop := startWriters(t, db)
	defer stop()
	pending := 0
	// Three rounds: a new migration, nothing new, a new one again (five
	// took two and a half minutes under -race and proved nothing more).
	for round := 1; round <= 3; round++ {
		if round%2 == 1 {
			pending++ // odd rounds bring a new migration
		}
		sets := append(migrationSets(), liveSet(pending))
		r := migrateCLI(t, db, sets, "check")
		require.Equal(t, exitOK, r.code, "round %d check: %s%s", round, r.stdout, r.stderr)
		r = migrateCLI(t, db, sets, "up")
		require.Equal(t, exitOK, r.code, "round %d up: %s%s", round, r.stdout, r.stderr)
		if round%2 == 1 {
			require.Contains(t, r.stdout, fmt.Sprintf("applied: 209901020000%02d", pending), "round %d", round)
		} else {
			require.Contains(t, r.stdout, "nothing to apply", "round %d", round)
		}
	}
	require.Positive(t, stop(), "the writers kept writing during the release")
}

// A migration is structure-only: one that writes rows is refused by the
// pre-flight check before anything is applied. DML inside a function body,
// a comment or a string literal is not a data change.
func TestMigrationWritingDataIsRefused(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, sql string
		refused   bool
	}{
		{"insert", `INSERT INTO tb_system_config (config_key, config_value, value_type, module) VALUES ('a.b.c', '1', 'int', 'a');`, true},
		{"update", `UPDATE tb_outbox_event SET retry_count = 0;`, true},
		{"delete after DDL", "CREATE TABLE tb_test_x (id int, CONSTRAINT pk_test_x PRIMARY KEY (id));\ndelete from tb_outbox_event where status = 4", true},
		{"truncate", `TRUNCATE tb_backfill_checkpoint;`, true},
		{"copy", `COPY tb_system_config FROM STDIN;`, true},
		{"merge", `MERGE INTO tb_system_config c USING (SELECT 1) s ON false WHEN NOT MATCHED THEN DO NOTHING;`, true},
		{"writing CTE", `WITH d AS (DELETE FROM tb_outbox_event RETURNING id) SELECT count(*) FROM d;`, true},
		{"function body, comments and strings", `-- insert into tb_outbox_event is what the function does, not the migration
			/* update tb_system_config set x = 1; */
			CREATE FUNCTION fn_test_archive() RETURNS void LANGUAGE plpgsql AS $body$
			BEGIN
				INSERT INTO tb_test_archive SELECT 1; DELETE FROM tb_test_archive; UPDATE tb_test_archive SET id = 2;
			END
			$body$;
			CREATE TABLE tb_test_archive (id int, note text DEFAULT 'delete; truncate tb_outbox_event', CONSTRAINT pk_test_archive PRIMARY KEY (id));
			COMMENT ON TABLE tb_test_archive IS 'it''s; insert into nothing';`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := testinfra.NewDB(t, testinfra.DBOpts{})
			require.Equal(t, exitOK, migrateCLI(t, db, foundation(), "up").code)
			insertOutbox(t, db.Bun, 4, 2)
			set := release.Set{Name: "test/dml", FS: fstest.MapFS{"20990103000001_dml.tx.up.sql": {Data: forwardOnly(tt.sql)}}}
			sets := append(foundation(), set)
			before := testinfra.Fingerprint(t, db.Bun)
			r := migrateCLI(t, db, sets, "check")
			if !tt.refused {
				require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
				require.Equal(t, exitOK, migrateCLI(t, db, sets, "up").code)
				return
			}
			require.Equal(t, exitCheckFailed, r.code, r.stdout+r.stderr)
			require.Contains(t, r.stdout, "migration_writes_data 20990103000001 count=1")
			r = migrateCLI(t, db, sets, "up")
			require.Equal(t, exitCheckFailed, r.code, r.stdout+r.stderr)
			require.Equal(t, before, testinfra.Fingerprint(t, db.Bun), "nothing applied")
		})
	}
}

// A pending migration that drops a table or a column holding rows is
// refused by the pre-flight check; on empty ones it applies.
func TestDropOfNonEmptyTableOrColumnIsRefused(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct{ name, sql, object string }{
		{"drop table", `DROP TABLE IF EXISTS tb_test_legacy;`, "tb_test_legacy"},
		{"drop column", "-- migrate:allow lint_drop_column: no code reads it since the last release\nALTER TABLE tb_test_legacy DROP CONSTRAINT ck_test_legacy_note, DROP COLUMN IF EXISTS note;", "tb_test_legacy.note"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := testinfra.NewDB(t, testinfra.DBOpts{})
			require.Equal(t, exitOK, migrateCLI(t, db, foundation(), "up").code)
			// A table no migration of these sets owns (created by an older tool).
			exec(t, db.Bun, `CREATE TABLE tb_test_legacy (id int PRIMARY KEY, note text, CONSTRAINT ck_test_legacy_note CHECK (note <> ''))`)
			exec(t, db.Bun, `INSERT INTO tb_test_legacy VALUES (1, 'kept')`)
			set := release.Set{Name: "test/drop", FS: fstest.MapFS{"20990104000001_drop_legacy.tx.up.sql": {Data: forwardOnly(tt.sql)}}}
			sets := append(foundation(), set)

			r := migrateCLI(t, db, sets, "check")
			require.Equal(t, exitCheckFailed, r.code, r.stdout+r.stderr)
			require.Contains(t, r.stdout, "drop_nonempty "+tt.object+" count=1")
			require.Equal(t, exitCheckFailed, migrateCLI(t, db, sets, "up").code)
			require.EqualValues(t, 1, count(t, db.Bun, `SELECT count(*) FROM tb_test_legacy WHERE note = 'kept'`))

			exec(t, db.Bun, `DELETE FROM tb_test_legacy`)
			r = migrateCLI(t, db, sets, "up")
			require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
			require.Contains(t, r.stdout, "applied: 20990104000001")
		})
	}
}
