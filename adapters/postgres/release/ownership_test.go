package release_test

import (
	"slices"
	"strings"
	"testing"

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
	require.ElementsMatch(t, []string{"tb_outbox_event", "tb_system_config", "tb_backfill_checkpoint", "tb_outbox_consumer_failure", "tb_audit_record", "tb_system_config_pin", "tb_outbox_consumption"}, man.Tables())
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
