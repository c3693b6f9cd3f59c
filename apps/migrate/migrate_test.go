package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/apps/internal/domains"
	"github.com/july/template/contracttests/testinfra"
)

type result struct {
	code           int
	stdout, stderr string
}

// migrateCLI runs the command in-process against db with the given sets.
func migrateCLI(t *testing.T, db *testinfra.DB, sets []release.Set, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return db.URL
		}
		return ""
	}
	code := runWith(context.Background(), args, getenv, &out, &errb, sets, backfills())
	return result{code, out.String(), errb.String()}
}

func foundation() []release.Set { return []release.Set{release.Foundation()} }

// forwardOnly is the up file sql of a test migration without a down file,
// with its rollback boundary: a forward-only marker.
func forwardOnly(sql string) []byte {
	return []byte(sql + "\n-- migrate:forward_only: test-only migration, never rolled back\n")
}

// widgetSet is a test-only domain set: v1 creates a table, v2 adds a unique
// constraint guarded by a duplicate-key precondition and a NOT NULL check
// guarded by a null precondition.
func widgetSet(extra map[string]string) release.Set {
	fsys := fstest.MapFS{
		"20990101000001_create_widget.tx.up.sql": {Data: []byte(`CREATE TABLE tb_test_widget (
			id bigint GENERATED ALWAYS AS IDENTITY, code varchar(32) NULL,
			CONSTRAINT pk_test_widget PRIMARY KEY (id));`)},
		"20990101000001_create_widget.tx.down.sql": {Data: []byte(`DROP TABLE tb_test_widget;`)},
		"20990101000002_widget_code_unique.tx.up.sql": {Data: []byte(`-- migrate:allow lint_index_not_concurrent: the widget table is small
			-- migrate:allow lint_constraint_validates_rows: the widget table is small
			ALTER TABLE tb_test_widget
			ADD CONSTRAINT uq_test_widget_code UNIQUE (code),
			ADD CONSTRAINT ck_test_widget_code_not_null CHECK (code IS NOT NULL);`)},
		"20990101000002_widget_code_unique.tx.down.sql": {Data: []byte(`ALTER TABLE tb_test_widget
			DROP CONSTRAINT uq_test_widget_code, DROP CONSTRAINT ck_test_widget_code_not_null;`)},
	}
	for k, v := range extra {
		fsys[k] = &fstest.MapFile{Data: []byte(v)}
	}
	return release.Set{Name: "test/widget", FS: fsys, Rules: []release.Rule{
		{Name: "widget_code_duplicate", Table: "tb_test_widget", Before: "20990101000002",
			SQL: `SELECT count(*) FROM (SELECT code FROM tb_test_widget GROUP BY code HAVING count(*) > 1) d`, Message: "duplicate codes"},
		{Name: "widget_code_null", Table: "tb_test_widget", Before: "20990101000002",
			SQL: `SELECT count(*) FROM tb_test_widget WHERE code IS NULL`, Message: "codes about to become NOT NULL are null"},
	}}
}

func TestHelpExitsZero(t *testing.T) {
	t.Parallel()

	for _, args := range [][]string{{"-h"}, {"status", "-h"}, {"check", "-h"}, {"up", "-h"}, {"verify", "-h"}, {"down", "-h"}, {"backfill", "-h"}} {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, func(string) string { return "" }, &out, &errb)
		require.Equal(t, exitOK, code, "args %v", args)
		require.Contains(t, out.String(), "Exit codes", "args %v must document exit codes", args)
	}
	var out, errb bytes.Buffer
	require.Equal(t, exitUsage, run(context.Background(), []string{"bogus"}, func(string) string { return "" }, &out, &errb))
	require.Equal(t, exitUsage, run(context.Background(), []string{"check"}, func(string) string { return "" }, &out, &errb),
		"missing DATABASE_URL is a usage error")
}

func TestForwardOnEmptyDatabase(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{})
	before := testinfra.Fingerprint(t, db.Bun)
	r := migrateCLI(t, db, foundation(), "check")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "15 pending")
	require.Equal(t, before, testinfra.Fingerprint(t, db.Bun), "check must write nothing, not even bun_migrations")

	r = migrateCLI(t, db, foundation(), "up")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "applied: 20261201000001, 20261201000002, 20261201000003, 20261201000004, 20261201000005, 20261201000006, 20261201000007, 20261201000008, 20261201000009, 20261201000010, 20261201000011, 20261201000012, 20261201000013, 20261201000014, 20261201000015")
	require.Contains(t, r.stdout, "verify: OK")

	r = migrateCLI(t, db, foundation(), "up")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "nothing to apply")

	r = migrateCLI(t, db, foundation(), "status", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, 15, strings.Count(r.stdout, `"applied":true`), r.stdout)

	require.Equal(t, exitOK, migrateCLI(t, db, foundation(), "verify").code)
	require.Zero(t, count(t, db.Bun, `SELECT count(*) FROM tb_outbox_event`), "the smoke test must leave no row")
}

func TestForwardWithCompatibleData(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	insertOutbox(t, db.Bun, 1, 5)
	insertOutbox(t, db.Bun, 3, 2)
	exec(t, db.Bun, `INSERT INTO tb_system_config (config_key, config_value, value_type, module) VALUES ('a.b.c', '1', 'int', 'a')`)

	sets := append(foundation(), widgetSet(nil))
	r := migrateCLI(t, db, sets, "up")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "applied: 20990101000001, 20990101000002")
	require.Contains(t, r.stdout, "WARNING   outbox_undelivered tb_outbox_event count=5", "pending work is a warning, not a failure")
	require.EqualValues(t, 7, count(t, db.Bun, `SELECT count(*) FROM tb_outbox_event`))
	require.EqualValues(t, 1, count(t, db.Bun, `SELECT count(*) FROM tb_system_config`))
}

func TestDownAllowedWithoutData(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	r := migrateCLI(t, db, foundation(), "down", "--to", "20261201000001")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "rolled back: 20261201000015, 20261201000014, 20261201000013, 20261201000012, 20261201000011, 20261201000010, 20261201000009, 20261201000008, 20261201000007, 20261201000006, 20261201000005, 20261201000004, 20261201000003, 20261201000002")
	require.Zero(t, count(t, db.Bun, `SELECT count(*) FROM pg_tables WHERE tablename IN ('tb_system_config', 'tb_backfill_checkpoint')`))
	require.EqualValues(t, 1, count(t, db.Bun, `SELECT count(*) FROM pg_tables WHERE tablename = 'tb_outbox_event'`))

	r = migrateCLI(t, db, foundation(), "up")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "applied: 20261201000002, 20261201000003, 20261201000004, 20261201000005, 20261201000006, 20261201000007, 20261201000008, 20261201000009, 20261201000010, 20261201000011, 20261201000012, 20261201000013, 20261201000014, 20261201000015", "forward again after a rollback")

	require.Equal(t, exitUsage, migrateCLI(t, db, foundation(), "down", "--to", "123").code, "unknown version")
	require.Equal(t, exitUsage, migrateCLI(t, db, foundation(), "down").code, "--to is required")
}

func TestDownRefusedWhenDataExists(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	insertOutbox(t, db.Bun, 3, 1)
	before := testinfra.Fingerprint(t, db.Bun)

	r := migrateCLI(t, db, foundation(), "down", "--to", "0", "--json")
	require.Equal(t, exitRefused, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, `"blocking":["tb_outbox_event"]`)
	require.Equal(t, before, testinfra.Fingerprint(t, db.Bun), "a refused down changes nothing")
}

func TestCheckDetectsViolationsWithoutWriting(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		plant []string
		want  string
	}{
		{"drifted column type", []string{`ALTER TABLE tb_system_config ALTER COLUMN module TYPE varchar(50)`},
			"schema_drift column:tb_system_config.module"},
		{"dropped index", []string{`DROP INDEX ix_outbox_event_pending_due`},
			"schema_missing index:ix_outbox_event_pending_due"},
		{"illegal outbox status", []string{`ALTER TABLE tb_outbox_event DROP CONSTRAINT ck_outbox_event_status`,
			`INSERT INTO tb_outbox_event (event_id, event_type, payload_version, aggregate_type, aggregate_id, resource_type, resource_id,
				request_id, correlation_id, payload, status) VALUES (gen_random_uuid(), 'x', 1, 'a', '1', 'r', '1', 'q', 'c', '{"secret":"s3cr3t-value"}', 9)`},
			"outbox_status_out_of_range tb_outbox_event count=1"},
		{"constraint made NOT VALID", []string{`ALTER TABLE tb_system_config DROP CONSTRAINT ck_system_config_value_type`,
			`INSERT INTO tb_system_config (config_key, config_value, value_type, module) VALUES ('a.b.c', 's3cr3t-value', 'float', 'a')`,
			`ALTER TABLE tb_system_config ADD CONSTRAINT ck_system_config_value_type CHECK (value_type IN ('string', 'int', 'bool', 'json')) NOT VALID`},
			"config_value_type_illegal tb_system_config count=1"},
		{"disabled trigger", []string{`ALTER TABLE tb_outbox_event DISABLE TRIGGER tg_outbox_event_notify`},
			"schema_drift trigger:tb_outbox_event.tg_outbox_event_notify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
			for _, q := range tt.plant {
				exec(t, db.Bun, q)
			}
			before := testinfra.Fingerprint(t, db.Bun)
			r := migrateCLI(t, db, foundation(), "check")
			require.Equal(t, exitCheckFailed, r.code, "plant %v: %s", tt.plant, r.stdout)
			require.Contains(t, r.stdout, tt.want)
			require.NotContains(t, r.stdout+r.stderr, "s3cr3t", "values must never be printed")
			require.Equal(t, before, testinfra.Fingerprint(t, db.Bun), "check must write nothing")

			r = migrateCLI(t, db, foundation(), "up", "--json")
			require.Equal(t, exitCheckFailed, r.code, "up must stop at the check: %s", r.stdout)
			require.Equal(t, before, testinfra.Fingerprint(t, db.Bun), "a failed check applies nothing")
		})
	}
}

func TestPreconditionsOfPendingMigration(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		rows string
		want string
	}{
		{"duplicate keys before unique constraint", `('a'), ('a'), ('b')`, "widget_code_duplicate tb_test_widget count=1"},
		{"nulls before not null", `('a'), (NULL), (NULL)`, "widget_code_null tb_test_widget count=2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
			onlyV1 := release.Set{Name: "test/widget", FS: fstest.MapFS{
				"20990101000001_create_widget.tx.up.sql":   widgetSet(nil).FS.(fstest.MapFS)["20990101000001_create_widget.tx.up.sql"],
				"20990101000001_create_widget.tx.down.sql": widgetSet(nil).FS.(fstest.MapFS)["20990101000001_create_widget.tx.down.sql"],
			}}
			require.Equal(t, exitOK, migrateCLI(t, db, append(foundation(), onlyV1), "up").code)
			exec(t, db.Bun, `INSERT INTO tb_test_widget (code) VALUES `+tt.rows)
			before := testinfra.Fingerprint(t, db.Bun)

			sets := append(foundation(), widgetSet(nil))
			r := migrateCLI(t, db, sets, "check")
			require.Equal(t, exitCheckFailed, r.code, r.stdout)
			require.Contains(t, r.stdout, tt.want)
			require.Contains(t, r.stdout, "precondition of pending migration 20990101000002")
			require.Equal(t, exitCheckFailed, migrateCLI(t, db, sets, "up").code)
			require.Equal(t, before, testinfra.Fingerprint(t, db.Bun), "nothing applied")
		})
	}
}

func TestOwnershipConflictFailsCheck(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{})
	rogue := release.Set{Name: "test/rogue", FS: fstest.MapFS{
		"20990101000009_touch_outbox.tx.up.sql": {Data: forwardOnly(`ALTER TABLE tb_outbox_event ALTER COLUMN status SET DEFAULT 2;
			CREATE INDEX ix_outbox_event_failed ON tb_outbox_event (id);`)},
	}}
	r := migrateCLI(t, db, append(foundation(), rogue), "check")
	require.Equal(t, exitCheckFailed, r.code, r.stdout)
	require.Contains(t, r.stdout, "ownership_conflict column:tb_outbox_event.status count=2")
	require.Contains(t, r.stdout, "ownership_conflict index:ix_outbox_event_failed", "creating an object another migration owns")
}

func TestFailedMigrationRollsBackAndCanBeRerun(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	// The second statement passes the rehearsal (an empty schema) and fails
	// on the live rows.
	exec(t, db.Bun, `INSERT INTO tb_system_config (config_key, config_value, value_type, module) VALUES ('a.b.c', '1', 'int', 'a')`)
	bad := release.Set{Name: "test/bad", FS: fstest.MapFS{
		"20990101000005_half.tx.up.sql": {Data: forwardOnly(`CREATE TABLE tb_test_half (id int, CONSTRAINT pk_test_half PRIMARY KEY (id));
			-- migrate:allow lint_constraint_validates_rows: test
			ALTER TABLE tb_system_config ADD CONSTRAINT ck_test_half CHECK (module <> 'a');`)},
	}}
	r := migrateCLI(t, db, append(foundation(), bad), "up")
	require.Equal(t, exitApplyFailed, r.code, r.stdout+r.stderr)
	require.Zero(t, count(t, db.Bun, `SELECT count(*) FROM pg_tables WHERE tablename = 'tb_test_half'`), "the half-applied migration must roll back")
	require.Zero(t, count(t, db.Bun, `SELECT count(*) FROM bun_migrations WHERE name = '20990101000005'`), "a failed migration is never recorded")

	fixed := release.Set{Name: "test/bad", FS: fstest.MapFS{
		"20990101000005_half.tx.up.sql": {Data: forwardOnly(`CREATE TABLE tb_test_half (id int, CONSTRAINT pk_test_half PRIMARY KEY (id));`)},
	}}
	r = migrateCLI(t, db, append(foundation(), fixed), "up")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "applied: 20990101000005")
}

func TestConcurrentUpAppliesOnce(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{})
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i := range results {
		wg.Go(func() { results[i] = migrateCLI(t, db, foundation(), "up") })
	}
	wg.Wait()
	applied := 0
	for _, r := range results {
		require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
		if strings.Contains(r.stdout, "applied: 2026") {
			applied++
		}
	}
	require.Equal(t, 1, applied, "exactly one run applies; the other finds nothing: %+v", results)
	require.EqualValues(t, 15, count(t, db.Bun, `SELECT count(*) FROM bun_migrations`))
}

func TestUpLockTimeout(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{})
	conn, err := db.Bun.Conn(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(context.Background(), fmt.Sprintf(`SELECT pg_advisory_lock(%d)`, release.LockKey))
	require.NoError(t, err)

	r := migrateCLI(t, db, foundation(), "up", "--lock-timeout", "300ms")
	require.Equal(t, exitLockTimeout, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "another migrate run holds it")
	require.Zero(t, count(t, db.Bun, `SELECT count(*) FROM pg_tables WHERE tablename = 'bun_migrations'`), "nothing applied")
}

func TestBackfillSeedSystemConfig(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	exec(t, db.Bun, `INSERT INTO tb_system_config (config_key, config_value, value_type, module) VALUES ('relay.delivery.batch_size', '7', 'int', 'relay')`)
	r := migrateCLI(t, db, foundation(), "backfill", "seed-system-config", "--batch-size", "3")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	seeds := configSeeds()
	keys := make([]string, 0, len(seeds))
	for _, s := range seeds {
		keys = append(keys, s.Key)
	}
	slices.Sort(keys) // the backfill walks the keys in order; the cursor is the batch's last
	require.GreaterOrEqual(t, len(keys), 3)
	require.Contains(t, r.stdout, fmt.Sprintf("batch 1 cursor=%s rows_done=3", keys[2]))
	require.Contains(t, r.stdout, fmt.Sprintf("finished, rows_done=%d", len(seeds)))
	require.EqualValues(t, len(seeds), count(t, db.Bun, `SELECT count(*) FROM tb_system_config`))
	// Every key of the service's one registry is seeded: the template's and
	// every domain's (regression: a domain's keys stayed at version 0).
	reg, err := domains.Registry()
	require.NoError(t, err)
	for _, module := range reg.Modules() {
		for _, spec := range reg.List(module) {
			if spec.Key == "relay.delivery.batch_size" {
				continue // kept at 7 above
			}
			require.EqualValues(t, 1, count(t, db.Bun, fmt.Sprintf(`SELECT count(*) FROM tb_system_config WHERE config_key = '%s'
				AND config_value = '%s' AND module = '%s' AND version >= 1`, spec.Key, spec.Default, spec.Module)), "key %s is seeded", spec.Key)
		}
	}

	require.EqualValues(t, 1, count(t, db.Bun, `SELECT count(*) FROM tb_system_config WHERE config_key = 'relay.delivery.batch_size' AND config_value = '7'`),
		"an existing value is never overwritten")

	r = migrateCLI(t, db, foundation(), "backfill", "seed-system-config")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.EqualValues(t, len(seeds), count(t, db.Bun, `SELECT count(*) FROM tb_system_config`), "a rerun adds nothing")
	require.Equal(t, exitUsage, migrateCLI(t, db, foundation(), "backfill", "nope").code)
}

func insertOutbox(t *testing.T, db bun.IDB, status, n int) {
	t.Helper()
	for range n {
		exec(t, db, fmt.Sprintf(`INSERT INTO tb_outbox_event (event_id, event_type, payload_version, aggregate_type, aggregate_id,
			resource_type, resource_id, request_id, correlation_id, payload, status, lease_owner, lease_expires_at, delivered_at)
			VALUES (gen_random_uuid(), 'x', 1, 'a', '1', 'r', '1', 'q', 'c', '{}', %d, 'w', now() + interval '1 minute',
			CASE WHEN %d = 3 THEN now() END)`, status, status))
	}
}

func count(t *testing.T, db bun.IDB, q string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.QueryRowContext(context.Background(), q).Scan(&n), q)
	return n
}

func exec(t *testing.T, db bun.IDB, q string) {
	t.Helper()
	_, err := db.ExecContext(context.Background(), q)
	require.NoError(t, err, q)
}

// fingerprint hashes the catalog and every row of every table in the
// current schema, so a test can prove a command wrote nothing.
func TestBadLogLevelIsRefused(t *testing.T) {
	t.Parallel()

	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"status"}, func(k string) string {
		return map[string]string{"LOG_LEVEL": "loud", "DATABASE_URL": "postgres://u:hunter2@db/x"}[k]
	}, &out, &errOut)
	require.Equal(t, 1, code, "a bad LOG_LEVEL is a usage error")
	require.Contains(t, errOut.String(), "LOG_LEVEL")
	require.NotContains(t, errOut.String(), "hunter2")
}

func TestVersion(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	require.Equal(t, exitOK, run(t.Context(), []string{"--version"}, func(string) string { return "" }, &out, &errb), errb.String())
	require.Regexp(t, `^migrate \S+ \S+\nrevision `, out.String())
}

// The partial lookup indexes (20261201000009, no transaction, CREATE INDEX
// CONCURRENTLY) go in through the release step on a database that already
// holds events in every status, and come out again; every event stays
// findable by aggregate, resource and correlation id through the view.
func TestPartialLookupsOnADatabaseHoldingEvents(t *testing.T) {
	t.Parallel()

	db, sets := untilBeforeNotBefore(t)
	for status := 1; status <= 4; status++ {
		insertOutbox(t, db.Bun, status, 2)
	}
	lookups := func(suffix string) int64 {
		return count(t, db.Bun, `SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			WHERE c.relname IN ('ix_outbox_event_aggregate`+suffix+`', 'ix_outbox_event_resource`+suffix+`', 'ix_outbox_event_correlation`+suffix+`')
			AND i.indisvalid AND i.indisready`)
	}
	r := migrateCLIWith(t, db, sets, backfills(), "down", "--to", "20261201000008")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "rolled back: 20261201000011, 20261201000010, 20261201000009")
	require.EqualValues(t, 3, lookups(""), "down restores the full lookup indexes")
	require.Zero(t, lookups("_unleased"))
	require.Zero(t, count(t, db.Bun, `SELECT count(*) FROM pg_views WHERE viewname = 'vw_outbox_event'`))

	r = migrateCLIWith(t, db, sets, backfills(), "check")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "3 pending")
	r = migrateCLIWith(t, db, sets, backfills(), "up")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "applied: 20261201000009, 20261201000010, 20261201000011")
	require.Contains(t, r.stdout, "verify: OK")
	require.EqualValues(t, 3, lookups("_unleased"), "valid partial lookups")
	require.Zero(t, lookups(""), "the full lookups are gone")
	for _, where := range []string{"aggregate_type = 'a' AND aggregate_id = '1'", "resource_type = 'r' AND resource_id = '1'", "correlation_id = 'c'"} {
		require.EqualValues(t, 8, count(t, db.Bun, `SELECT count(*) FROM vw_outbox_event WHERE `+where), where)
	}
}
