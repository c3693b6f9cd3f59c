package main

import (
	"bytes"
	"context"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/contracttests/testinfra"
)

// migrateEnv runs the CLI with DATABASE_URL and the given environment.
func migrateEnv(t *testing.T, db *testinfra.DB, sets []release.Set, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return db.URL
		}
		return env[k]
	}
	code := runWith(context.Background(), args, getenv, &out, &errb, sets, backfills())
	return result{code, out.String(), errb.String()}
}

// Testing Decision 2: a strict pre-check fails on unfinished tasks and
// undelivered outbox rows; by default (a release under live traffic) they
// are warnings. --strict and MIGRATE_STRICT choose it; the flag wins.
func TestStrictCheckFailsOnUnfinishedWork(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	tasks := release.Set{Name: "test/tasks", TaskTables: []string{"tb_test_task"}, FS: fstest.MapFS{
		"20990108000001_create_task.tx.up.sql":   {Data: []byte(`CREATE TABLE tb_test_task (id int PRIMARY KEY, status smallint NOT NULL, lease_expires_at timestamptz NULL);`)},
		"20990108000001_create_task.tx.down.sql": {Data: []byte(`DROP TABLE tb_test_task;`)},
	}}
	sets := append(foundation(), tasks)
	require.Equal(t, exitOK, migrateCLI(t, db, sets, "up").code)
	insertOutbox(t, db.Bun, 1, 1)
	insertOutbox(t, db.Bun, 4, 1)
	exec(t, db.Bun, `INSERT INTO tb_test_task VALUES (1, 2, now() - interval '1 minute')`)

	r := migrateEnv(t, db, sets, nil, "check")
	require.Equal(t, exitOK, r.code, "default: warnings only: %s%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "WARNING   outbox_undelivered tb_outbox_event count=1")
	require.Contains(t, r.stdout, "WARNING   task_unfinished tb_test_task count=1")

	for name, run := range map[string]func() result{
		"flag":            func() result { return migrateEnv(t, db, sets, nil, "check", "--strict") },
		"environment":     func() result { return migrateEnv(t, db, sets, map[string]string{"MIGRATE_STRICT": "true"}, "check") },
		"up with a flag":  func() result { return migrateEnv(t, db, sets, nil, "up", "--strict") },
		"up, environment": func() result { return migrateEnv(t, db, sets, map[string]string{"MIGRATE_STRICT": "1"}, "up") },
	} {
		r := run()
		require.Equal(t, exitCheckFailed, r.code, "%s: %s%s", name, r.stdout, r.stderr)
		for _, want := range []string{
			"VIOLATION outbox_undelivered tb_outbox_event count=1",
			"VIOLATION task_unfinished tb_test_task count=1",
			"VIOLATION task_lease_expired tb_test_task count=1",
			"WARNING   outbox_failed tb_outbox_event count=1", // final; replaying it is its own decision
		} {
			require.Contains(t, r.stdout, want, name)
		}
	}
	r = migrateEnv(t, db, sets, map[string]string{"MIGRATE_STRICT": "true"}, "check", "--strict=false")
	require.Equal(t, exitOK, r.code, "the flag overrides the environment: %s", r.stdout)
	r = migrateEnv(t, db, sets, map[string]string{"MIGRATE_STRICT": "maybe"}, "check")
	require.Equal(t, exitUsage, r.code, r.stdout)
	require.Contains(t, r.stderr, "MIGRATE_STRICT")

	// Drained: the relay delivered, the worker finished.
	exec(t, db.Bun, `UPDATE tb_outbox_event SET status = 3, delivered_at = now(), lease_owner = NULL, lease_expires_at = NULL WHERE status = 1`)
	exec(t, db.Bun, `UPDATE tb_test_task SET status = 3, lease_expires_at = NULL`)
	r = migrateEnv(t, db, sets, nil, "check", "--strict")
	require.Equal(t, exitOK, r.code, "%s%s", r.stdout, r.stderr)
}
