package release_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/pgtasks"
	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/contracttests/testinfra"
)

// downstreamSet is a downstream team's set: it creates its own table with
// the object kinds regular expressions used to miss, and touches the
// foundation's tables only by adding objects of its own.
func downstreamSet() release.Set {
	return testSet("downstream/orders", map[string]string{
		"20990201000001_create_orders": `CREATE TABLE "Orders" (id bigserial PRIMARY KEY, "Code" text NOT NULL, "Ref" varchar(32) NOT NULL DEFAULT '', note text DEFAULT 'CREATE TABLE phantom (id int)');
			CREATE INDEX ON "Orders" ("Code");
			CREATE UNIQUE INDEX ux_orders_code ON "Orders" (lower("Code"));
			ALTER TABLE "Orders" ADD CONSTRAINT ck_orders_code CHECK ("Code" <> '');
			CREATE SEQUENCE orders_ticket_seq;
			CREATE VIEW v_orders AS SELECT id, "Code" FROM "Orders";
			CREATE FUNCTION fn_orders_touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM 'CREATE TABLE ghost (id int)'; RETURN NEW; END $$;
			CREATE TRIGGER tg_orders_touch BEFORE UPDATE ON "Orders" FOR EACH ROW EXECUTE FUNCTION fn_orders_touch();
			CREATE TYPE order_state AS ENUM ('new', 'paid');
			SELECT 'CREATE TABLE phantom2 (id int)';`,
		"20990201000002_orders_on_outbox": `ALTER TABLE tb_outbox_event ADD COLUMN order_ref text;
			-- migrate:allow lint_index_not_concurrent: test set
			CREATE INDEX ix_outbox_event_order_ref ON tb_outbox_event (order_ref);`,
	})
}

func TestRehearsalClaimsEveryObjectKind(t *testing.T) {
	t.Parallel()

	db := emptyDB(t)
	man, err := release.BuildManifest(t.Context(), db.Bun, []release.Set{release.Foundation(), downstreamSet()})
	require.NoError(t, err)
	for _, obj := range []string{
		"table:Orders", "column:Orders.Code", "constraint:Orders.Orders_pkey", "constraint:Orders.ck_orders_code",
		"index:Orders_Code_idx", "index:ux_orders_code", "sequence:Orders_id_seq", "sequence:orders_ticket_seq",
		"view:v_orders", "function:fn_orders_touch()", "trigger:Orders.tg_orders_touch", "type:order_state",
	} {
		require.Equal(t, []string{"20990201000001"}, man.Owners(obj), "object %s", obj)
	}
	require.Equal(t, []string{"20990201000002"}, man.Owners("column:tb_outbox_event.order_ref"), "ALTER TABLE ... ADD COLUMN on another set's table is claimed")
	require.Equal(t, []string{"20990201000002"}, man.Owners("index:ix_outbox_event_order_ref"), "CREATE INDEX ... ON another set's table is claimed")
	for _, phantom := range []string{"table:phantom", "table:phantom2", "table:ghost"} {
		require.Empty(t, man.Owners(phantom), "a string literal never yields an object (%s)", phantom)
	}
}

func TestUntrackedObjectKindsAreRejected(t *testing.T) {
	t.Parallel()

	db := emptyDB(t)
	for name, sql := range map[string]string{
		"schema":    `CREATE SCHEMA downstream_extra`,
		"collation": `CREATE COLLATION coll_downstream FROM "C"`,
		"aggregate": `CREATE AGGREGATE agg_downstream (int) (SFUNC = int4pl, STYPE = int)`,
	} {
		r, err := release.Check(t.Context(), db.Bun, []release.Set{release.Foundation(), testSet("downstream/odd", map[string]string{"20990301000001_odd": sql})})
		require.NoError(t, err)
		require.Contains(t, codes(r), "violation:unsupported_object:20990301000001", "%s: %v", name, r.Findings)
	}
}

// plantCase is one manual change to an owned object and the finding it
// must produce.
type plantCase struct {
	name  string
	plant string
	want  string
}

func driftCases(table, col, index, constraint string) []plantCase {
	return []plantCase{
		{"extra column", `ALTER TABLE ` + table + ` ADD COLUMN extra_col int`, "violation:schema_extra:column:" + table + ".extra_col"},
		{"extra index", `CREATE INDEX ix_extra ON ` + table + ` (` + col + `)`, "violation:schema_extra:index:ix_extra"},
		{"extra constraint", `ALTER TABLE ` + table + ` ADD CONSTRAINT ck_extra CHECK (` + col + ` IS NOT NULL)`, "violation:schema_extra:constraint:" + table + ".ck_extra"},
		{"extra trigger", `CREATE TRIGGER tg_extra BEFORE UPDATE ON ` + table + ` FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()`, "violation:schema_extra:trigger:" + table + ".tg_extra"},
		{"changed type", `ALTER TABLE ` + table + ` ALTER COLUMN ` + col + ` TYPE text`, "violation:schema_drift:column:" + table + "." + col},
		{"changed default", `ALTER TABLE ` + table + ` ALTER COLUMN ` + col + ` SET DEFAULT 'x'`, "violation:schema_drift:column:" + table + "." + col},
		{"changed nullability", `ALTER TABLE ` + table + ` ALTER COLUMN ` + col + ` DROP NOT NULL`, "violation:schema_drift:column:" + table + "." + col},
		{"changed index", `DROP INDEX ` + index + `; CREATE INDEX ` + index + ` ON ` + table + ` (` + col + ` DESC)`, "violation:schema_drift:index:" + index},
		{"dropped constraint", `ALTER TABLE ` + table + ` DROP CONSTRAINT ` + constraint, "violation:schema_missing:constraint:" + table + "." + constraint},
	}
}

func TestDriftOfEveryKindIsDetected(t *testing.T) {
	t.Parallel()

	sets := []release.Set{release.Foundation()}
	sets = append(sets, downstreamSet())
	targets := []struct {
		owner                         string
		table, col, index, constraint string
	}{
		{"foundation", "tb_system_config", "module", "ix_system_config_module", "ck_system_config_value_type"},
		{"downstream", `"Orders"`, `"Ref"`, "ux_orders_code", "ck_orders_code"},
	}
	for _, target := range targets {
		for _, tc := range driftCases(target.table, target.col, target.index, target.constraint) {
			t.Run(target.owner+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				db := testinfra.NewDB(t, testinfra.DBOpts{})
				up(t, db.Bun, sets)
				for _, q := range strings.Split(tc.plant, "; ") {
					exec(t, db.Bun, q)
				}
				r, err := release.Check(t.Context(), db.Bun, sets)
				require.NoError(t, err)
				want := strings.ReplaceAll(tc.want, `"`, "")
				require.Contains(t, codes(r), want, "plant %q", tc.plant)
			})
		}
	}
}

func TestInvalidIndexAndUnvalidatedConstraintFailCheck(t *testing.T) {
	t.Parallel()

	sets := []release.Set{release.Foundation()}
	db2 := migrated(t)
	exec(t, db2.Bun, `INSERT INTO tb_system_config (config_key, config_value, value_type, module) VALUES ('a.b.c', '1', 'int', 'm'), ('a.b.d', '1', 'int', 'm')`)
	exec(t, db2.Bun, `DROP INDEX ix_system_config_module`)
	// A failed CREATE INDEX CONCURRENTLY leaves an INVALID index behind.
	_, err := db2.Bun.ExecContext(t.Context(), `CREATE UNIQUE INDEX CONCURRENTLY ix_system_config_module ON tb_system_config (module)`)
	require.Error(t, err)
	exec(t, db2.Bun, `ALTER TABLE tb_system_config DROP CONSTRAINT ck_system_config_value_type`)
	exec(t, db2.Bun, `ALTER TABLE tb_system_config ADD CONSTRAINT ck_system_config_value_type CHECK (value_type IN ('string', 'int', 'bool', 'json')) NOT VALID`)
	r, err := release.Check(t.Context(), db2.Bun, sets)
	require.NoError(t, err)
	require.Contains(t, codes(r), "violation:index_invalid:index:ix_system_config_module")
	require.Contains(t, codes(r), "violation:constraint_not_validated:constraint:tb_system_config.ck_system_config_value_type")
}

func TestPreChecksTheFindingsThePRDLists(t *testing.T) {
	t.Parallel()

	t.Run("ServerVersion", func(t *testing.T) {
		t.Parallel()
		require.Contains(t, codes(release.CheckServerVersion(120000)), "violation:server_version:server_version_num")
		require.Empty(t, codes(release.CheckServerVersion(release.MinServerVersion)))
	})
	t.Run("UnknownAppliedMigration", func(t *testing.T) {
		t.Parallel()
		db := migrated(t)
		exec(t, db.Bun, `INSERT INTO bun_migrations (name, group_id) VALUES ('20991231000001', 1)`)
		r, err := release.Check(t.Context(), db.Bun, []release.Set{release.Foundation()})
		require.NoError(t, err)
		require.Contains(t, codes(r), "violation:unknown_applied_migration:20991231000001")
	})
	t.Run("DuplicateEventIDBeforeTheUniqueConstraint", func(t *testing.T) {
		t.Parallel()
		db := migrated(t)
		exec(t, db.Bun, `ALTER TABLE tb_outbox_event DROP CONSTRAINT uq_outbox_event_event_id`)
		for range 2 {
			exec(t, db.Bun, `INSERT INTO tb_outbox_event (event_id, event_type, payload_version, aggregate_type, aggregate_id, resource_type, resource_id,
				request_id, correlation_id, payload) VALUES ('6f1c1d2e-8a4b-4c3d-9e8f-0a1b2c3d4e5f', 'a.b', 1, 'a', '1', 'r', '1', 'q', 'c', '{}')`)
		}
		r, err := release.Check(t.Context(), db.Bun, []release.Set{release.Foundation()})
		require.NoError(t, err)
		require.Contains(t, codes(r), "violation:outbox_event_id_duplicate:tb_outbox_event")
	})
	t.Run("LongHeldLeaseAndUnfinishedTasks", func(t *testing.T) {
		t.Parallel()
		db := testinfra.NewDB(t, testinfra.DBOpts{})
		tasks := testSet("downstream/tasks", map[string]string{
			"20990401000001_create_tasks": `CREATE TABLE tb_test_task (id text PRIMARY KEY, ` + pgtasks.ColumnsSQL + `)`,
		})
		tasks.TaskTables = []string{"tb_test_task"}
		sets := []release.Set{release.Foundation(), tasks}
		up(t, db.Bun, sets)
		exec(t, db.Bun, `INSERT INTO tb_outbox_event (event_id, event_type, payload_version, aggregate_type, aggregate_id, resource_type, resource_id,
			request_id, correlation_id, payload, status, lease_owner, lease_expires_at, updated_at)
			VALUES (gen_random_uuid(), 'a.b', 1, 'a', '1', 'r', '1', 'q', 'c', '{}', 2, 'relay-stuck/0', now() + interval '1 hour', now() - interval '1 hour')`)
		exec(t, db.Bun, `INSERT INTO tb_test_task (id, status, lease_owner, lease_expires_at) VALUES ('t-1', 2, 'w', now() - interval '1 minute')`)
		r, err := release.Check(t.Context(), db.Bun, sets)
		require.NoError(t, err)
		require.True(t, r.OK(), "these are warnings: %v", codes(r))
		for _, want := range []string{"warning:outbox_long_lease:tb_outbox_event", "warning:task_unfinished:tb_test_task", "warning:task_lease_expired:tb_test_task"} {
			require.Contains(t, codes(r), want)
		}
	})
	t.Run("SmokeFailed", func(t *testing.T) {
		t.Parallel()
		db := migrated(t)
		exec(t, db.Bun, `CREATE FUNCTION fn_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no'; END $$`)
		exec(t, db.Bun, `CREATE TRIGGER tg_refuse BEFORE INSERT ON tb_system_config FOR EACH ROW EXECUTE FUNCTION fn_refuse()`)
		r, err := release.Verify(t.Context(), db.Bun, []release.Set{release.Foundation()})
		require.NoError(t, err)
		require.Contains(t, codes(r), "violation:smoke_failed:foundation")
	})
}

func TestLintFlagsLockingOperationsOnExistingTables(t *testing.T) {
	t.Parallel()

	base := map[string]string{"20990401000001_create_hot": `CREATE TABLE tb_hot (id bigint PRIMARY KEY, code text, n int)`}
	tests := []struct {
		name, sql, want string
	}{
		{"volatile default", `ALTER TABLE tb_hot ADD COLUMN token uuid DEFAULT gen_random_uuid()`, "violation:lint_volatile_default:column:tb_hot.token"},
		{"column type", `ALTER TABLE tb_hot ALTER COLUMN n TYPE bigint`, "violation:lint_column_type_change:column:tb_hot.n"},
		{"index not concurrent", `CREATE INDEX ix_hot_code ON tb_hot (code)`, "violation:lint_index_not_concurrent:index:ix_hot_code"},
		{"set not null", `ALTER TABLE tb_hot ALTER COLUMN code SET NOT NULL`, "violation:lint_set_not_null:column:tb_hot.code"},
		{"drop column", `ALTER TABLE tb_hot DROP COLUMN n`, "violation:lint_drop_column:column:tb_hot.n"},
		{"check validates rows", `ALTER TABLE tb_hot ADD CONSTRAINT ck_hot_n CHECK (n > 0)`, "violation:lint_constraint_validates_rows:constraint:tb_hot.ck_hot_n"},
		{"suppressed with a reason", "-- migrate:allow lint_index_not_concurrent: tb_hot holds ten rows\nCREATE INDEX ix_hot_code ON tb_hot (code)",
			"warning:lint_index_not_concurrent:index:ix_hot_code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := emptyDB(t)
			files := map[string]string{"20990401000002_change_hot": tt.sql}
			for k, v := range base {
				files[k] = v
			}
			r, err := release.Check(t.Context(), db.Bun, []release.Set{release.Foundation(), testSet("test/hot", files)})
			require.NoError(t, err)
			require.Contains(t, codes(r), tt.want, "sql %q", tt.sql)
		})
	}

	t.Run("ConcurrentIndexInANonTxFile", func(t *testing.T) {
		t.Parallel()
		db := emptyDB(t)
		set := testSet("test/hot", base)
		set.FS.(fstest.MapFS)["20990401000002_index_hot.up.sql"] = &fstest.MapFile{Data: []byte("CREATE INDEX CONCURRENTLY ix_hot_code ON tb_hot (code);\n" + forwardOnlyTest)}
		sets := []release.Set{release.Foundation(), set}
		r, err := release.Check(t.Context(), db.Bun, sets)
		require.NoError(t, err)
		require.True(t, r.OK(), "CREATE INDEX CONCURRENTLY is rehearsed and not linted: %v", codes(r))
		up(t, db.Bun, sets)
		r, err = release.Check(t.Context(), db.Bun, sets)
		require.NoError(t, err)
		require.True(t, r.OK(), "after up the index matches: %v", codes(r))
	})

	t.Run("RefusedStatements", func(t *testing.T) {
		t.Parallel()
		db := emptyDB(t)
		for name, tc := range map[string]struct{ file, sql, want string }{
			"concurrently in a .tx file": {"20990401000002_index_hot.tx.up.sql", `CREATE INDEX CONCURRENTLY ix_hot_code ON tb_hot (code)`, "violation:concurrently_in_tx:20990401000002"},
			"schema-qualified":           {"20990401000002_touch_live.tx.up.sql", `ALTER TABLE public.tb_hot ADD COLUMN x int`, "violation:migration_schema_qualified:20990401000002"},
		} {
			set := testSet("test/hot", base)
			set.FS.(fstest.MapFS)[tc.file] = &fstest.MapFile{Data: []byte(tc.sql)}
			r, err := release.Check(t.Context(), db.Bun, []release.Set{release.Foundation(), set})
			require.NoError(t, err)
			require.Contains(t, codes(r), tc.want, name)
		}
	})

	t.Run("NewTableIsNotHot", func(t *testing.T) {
		t.Parallel()
		db := emptyDB(t)
		set := testSet("test/cold", map[string]string{"20990401000001_create_cold": `CREATE TABLE tb_cold (id bigint PRIMARY KEY, code text NOT NULL DEFAULT gen_random_uuid()::text);
			CREATE INDEX ix_cold_code ON tb_cold (code);
			ALTER TABLE tb_cold ADD CONSTRAINT ck_cold CHECK (code <> '')`})
		r, err := release.Check(t.Context(), db.Bun, []release.Set{release.Foundation(), set})
		require.NoError(t, err)
		require.True(t, r.OK(), "objects of a table created in the same migration are not linted: %v", codes(r))
	})
}

func TestEditedMigrationMakesSnapshotStale(t *testing.T) {
	t.Parallel()

	db := emptyDB(t)
	orig := testSet("test/snap", map[string]string{"20990501000001_create_snap": `CREATE TABLE tb_snap (id int PRIMARY KEY)`})
	snaps, err := release.TakeSnapshot(t.Context(), db.Bun, []release.Set{release.Foundation(), orig})
	require.NoError(t, err)
	b, err := snaps["test/snap"].Encode()
	require.NoError(t, err)

	edited := testSet("test/snap", map[string]string{"20990501000001_create_snap": `CREATE TABLE tb_snap (id bigint PRIMARY KEY)`})
	edited.FS.(fstest.MapFS)[release.SnapshotFile] = &fstest.MapFile{Data: b}
	r, err := release.Check(t.Context(), db.Bun, []release.Set{release.Foundation(), edited})
	require.NoError(t, err)
	require.Contains(t, codes(r), "violation:snapshot_stale:20990501000001")

	orig.FS.(fstest.MapFS)[release.SnapshotFile] = &fstest.MapFile{Data: b}
	r, err = release.Check(t.Context(), db.Bun, []release.Set{release.Foundation(), orig})
	require.NoError(t, err)
	require.True(t, r.OK(), "an unchanged set matches its snapshot: %v", codes(r))
}

// up applies sets and requires a clean release.
func up(t *testing.T, db *bun.DB, sets []release.Set) {
	t.Helper()
	res, err := release.Up(context.Background(), db, sets, release.DefaultLockTimeout)
	require.NoError(t, err, "up: %+v", res)
}
