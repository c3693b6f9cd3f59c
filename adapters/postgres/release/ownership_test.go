package release_test

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/contracttests/testinfra"
)

func emptyDB(t *testing.T) *testinfra.DB {
	t.Helper()
	return testinfra.NewDB(t, testinfra.DBOpts{})
}

func TestFoundationOwnsEachObjectOnce(t *testing.T) {
	t.Parallel()

	man, err := release.BuildManifest(t.Context(), emptyDB(t).Bun, []release.Set{release.Foundation()})
	require.NoError(t, err)
	for _, obj := range []string{"table:tb_outbox_event", "column:tb_outbox_event.lease_token", "constraint:tb_outbox_event.uq_outbox_event_event_id",
		"index:ix_outbox_event_pending_due", "trigger:tb_outbox_event.tg_outbox_event_notify", "function:fn_outbox_event_notify()",
		"table:tb_system_config", "constraint:tb_system_config.uq_system_config_config_key", "index:ix_system_config_module", "table:tb_backfill_checkpoint"} {
		require.Len(t, man.Owners(obj), 1, "object %s must have exactly one owner", obj)
	}
	require.ElementsMatch(t, []string{"tb_outbox_event", "tb_system_config", "tb_backfill_checkpoint", "tb_outbox_consumer_failure", "tb_audit_record", "tb_system_config_pin", "tb_outbox_consumption", "tb_periodic_command"}, man.Tables())
}

func TestOwnershipConflictsAreViolations(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, sql, want string
	}{
		{"index created twice", `CREATE INDEX ix_outbox_event_failed ON tb_outbox_event (id)`, "index:ix_outbox_event_failed"},
		{"foreign column altered", `ALTER TABLE tb_system_config ALTER COLUMN module TYPE text`, "column:tb_system_config.module"},
		{"foreign constraint dropped", `ALTER TABLE tb_outbox_event DROP CONSTRAINT ck_outbox_event_status`, "constraint:tb_outbox_event.ck_outbox_event_status"},
		{"foreign table dropped", `DROP TABLE IF EXISTS tb_system_config`, "table:tb_system_config"},
		{"foreign index dropped", `DROP INDEX ix_outbox_event_failed`, "index:ix_outbox_event_failed"},
	}
	db := emptyDB(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sets := []release.Set{release.Foundation(), testSet("test/rogue", map[string]string{"20990101000001_rogue": tt.sql})}
			r, err := release.Check(t.Context(), db.Bun, sets)
			require.NoError(t, err)
			require.False(t, r.OK(), "sql %q", tt.sql)
			require.Contains(t, codes(r), "violation:ownership_conflict:"+tt.want, "sql %q", tt.sql)
		})
	}
}

// A set may retire its own object in a later migration (the foundation's
// 20261201000009 replaces the full lookup indexes of 20261201000001 with
// partial ones), but altering it later is still a conflict.
func TestLaterMigrationOfTheSameSetMayDropItsObject(t *testing.T) {
	t.Parallel()

	db := emptyDB(t)
	create := "CREATE TABLE tb_test_retire (id int PRIMARY KEY, note text); CREATE INDEX ix_test_retire_note ON tb_test_retire (note)"
	for _, tt := range []struct {
		name, later string
		conflict    bool
	}{
		{"dropped", "DROP INDEX ix_test_retire_note", false},
		{"altered", "ALTER INDEX ix_test_retire_note SET (fillfactor = 70)", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set := testSet("test/retire", map[string]string{"20990101000001_create_retire": create, "20990101000002_change_retire": tt.later})
			r, err := release.Check(t.Context(), db.Bun, []release.Set{release.Foundation(), set})
			require.NoError(t, err)
			require.Equal(t, tt.conflict, slices.Contains(codes(r), "violation:ownership_conflict:index:ix_test_retire_note"), "%v", codes(r))
		})
	}
	r, err := release.Check(t.Context(), db.Bun, []release.Set{release.Foundation()})
	require.NoError(t, err)
	require.NotContains(t, strings.Join(codes(r), " "), "ownership_conflict", "the foundation's own index replacement")
}

func TestObjectOfPendingMigrationExistsAlready(t *testing.T) {
	t.Parallel()

	db := emptyDB(t)
	exec(t, db.Bun, `CREATE TABLE tb_system_config (id int)`)
	r, err := release.Check(t.Context(), db.Bun, []release.Set{release.Foundation()})
	require.NoError(t, err)
	require.Contains(t, codes(r), "violation:object_exists:table:tb_system_config", "IF NOT EXISTS must not hide a stray object")
}

// foundationPlus is the foundation set with extra migrations (version ->
// up SQL, version+".down" -> down SQL) and without its schema.json.
func foundationPlus(t *testing.T, extra map[string]string) release.Set {
	t.Helper()
	f := release.Foundation()
	fsys := testSet(release.FoundationName, extra).FS.(fstest.MapFS)
	entries, err := fs.ReadDir(f.FS, ".")
	require.NoError(t, err)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		b, err := fs.ReadFile(f.FS, e.Name())
		require.NoError(t, err)
		fsys[e.Name()] = &fstest.MapFile{Data: b}
	}
	f.FS = fsys
	return f
}

// The documented way to add a column to tb_outbox_event (migration
// 20261201000009): a later foundation migration adds it and recreates
// vw_outbox_event, with CREATE OR REPLACE VIEW or DROP VIEW + CREATE VIEW.
// Another set may still not touch the foundation's view.
func TestLaterMigrationOfTheSameSetMayRecreateItsView(t *testing.T) {
	t.Parallel()

	const view = `vw_outbox_event AS
    SELECT * FROM tb_outbox_event WHERE status <> 2
    UNION ALL
    SELECT * FROM tb_outbox_event WHERE status = 2;`
	const down = `DROP VIEW vw_outbox_event;
ALTER TABLE tb_outbox_event DROP COLUMN note;
CREATE VIEW ` + view
	for _, tt := range []struct{ name, sql string }{
		{"create or replace", "ALTER TABLE tb_outbox_event ADD COLUMN note text NULL;\nCREATE OR REPLACE VIEW " + view},
		{"drop and create", "ALTER TABLE tb_outbox_event ADD COLUMN note text NULL;\nDROP VIEW vw_outbox_event;\nCREATE VIEW " + view},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := emptyDB(t)
			set := foundationPlus(t, map[string]string{"20990101000001_add_outbox_note": tt.sql, "20990101000001_add_outbox_note.down": down})
			res, err := release.Up(t.Context(), db.Bun, []release.Set{set}, time.Minute)
			require.NoError(t, err, "check: %v verify: %v", codesOf(res.Check), codesOf(res.Verify))
			var n int
			require.NoError(t, db.Bun.QueryRowContext(t.Context(),
				`SELECT count(*) FROM pg_attribute WHERE attrelid = 'vw_outbox_event'::regclass AND attname = 'note'`).Scan(&n))
			require.Equal(t, 1, n, "the view shows the new column")
			r, err := release.Check(t.Context(), db.Bun, []release.Set{set})
			require.NoError(t, err)
			require.True(t, r.OK(), "check after up: %v", codes(r))

			rogue := testSet("test/rogue", map[string]string{"20990101000002_rogue_view": strings.ReplaceAll(tt.sql, "ADD COLUMN note", "ADD COLUMN rogue_note")})
			r, err = release.Check(t.Context(), emptyDB(t).Bun, []release.Set{release.Foundation(), rogue})
			require.NoError(t, err)
			require.Contains(t, codes(r), "violation:ownership_conflict:view:vw_outbox_event", "another set may not recreate the foundation's view")
		})
	}
}
