package release_test

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres/release"
)

// rawSet is a set of exactly the files given (name -> content).
func rawSet(name string, files map[string]string) release.Set {
	fsys := fstest.MapFS{}
	for k, v := range files {
		fsys[k] = &fstest.MapFile{Data: []byte(v)}
	}
	return release.Set{Name: name, FS: fsys}
}

// Every migration states its forward and rollback boundary
// (docs/release-runbook.md). A pending migration has a down
// file or says it is forward-only, and why; check reports one with neither.
func TestEveryPendingMigrationHasARollbackBoundary(t *testing.T) {
	t.Parallel()

	const up = "CREATE TABLE tb_test_boundary (id int PRIMARY KEY);\n"
	db := emptyDB(t)
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  string // finding, "" for none about the boundary
	}{
		{"down file", map[string]string{"20990701000001_boundary.tx.up.sql": up, "20990701000001_boundary.tx.down.sql": "DROP TABLE tb_test_boundary;"}, ""},
		{"forward-only with a reason", map[string]string{"20990701000001_boundary.tx.up.sql": "-- migrate:forward_only: the table is filled by the consumer at once\n" + up}, ""},
		{"neither", map[string]string{"20990701000001_boundary.tx.up.sql": up}, "violation:rollback_boundary_missing:20990701000001"},
		{"forward-only without a reason", map[string]string{"20990701000001_boundary.tx.up.sql": "-- migrate:forward_only:\n" + up}, "violation:migration_directive_invalid:20990701000001"},
		{"both", map[string]string{"20990701000001_boundary.tx.up.sql": "-- migrate:forward_only: no way back\n" + up, "20990701000001_boundary.tx.down.sql": "DROP TABLE tb_test_boundary;"},
			"violation:rollback_boundary_ambiguous:20990701000001"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := release.Check(t.Context(), db.Bun, []release.Set{release.Foundation(), rawSet("test/boundary", tt.files)})
			require.NoError(t, err)
			var got []string
			for _, c := range codes(r) {
				if c == tt.want || containsAny(c, "rollback_boundary", "migration_directive_invalid") {
					got = append(got, c)
				}
			}
			if tt.want == "" {
				require.Empty(t, got)
				require.True(t, r.OK(), "%v", codes(r))
				return
			}
			require.Equal(t, []string{tt.want}, got)
		})
	}
}

// The foundation's set satisfies the rule (apps/migrate checks every
// domain's: TestDomainSetsHaveRollbackBoundaries).
func TestShippedMigrationsHaveRollbackBoundaries(t *testing.T) {
	t.Parallel()

	sets := []release.Set{release.Foundation()}
	r, err := release.Check(t.Context(), emptyDB(t).Bun, sets)
	require.NoError(t, err)
	require.NotEmpty(t, r.Pending)
	for _, c := range codes(r) {
		require.NotContains(t, c, "rollback_boundary")
	}
	require.True(t, r.OK(), "%v", codes(r))
}

// Down of a forward-only migration changes nothing and says why.
func TestDownRefusesAForwardOnlyMigrationWithItsReason(t *testing.T) {
	t.Parallel()

	db := emptyDB(t)
	set := rawSet("test/forward", map[string]string{
		"20990701000002_forward.tx.up.sql": "-- migrate:forward_only: rows are business facts from the first write\nCREATE TABLE tb_test_forward (id int PRIMARY KEY);\n",
	})
	sets := []release.Set{release.Foundation(), set}
	_, err := release.Up(t.Context(), db.Bun, sets, time.Minute)
	require.NoError(t, err)
	res, err := release.Down(t.Context(), db.Bun, sets, "20261201000015", time.Minute)
	require.Error(t, err)
	require.Contains(t, err.Error(), "forward-only")
	require.Contains(t, err.Error(), "rows are business facts from the first write")
	require.Empty(t, res.RolledBack)
	st, err := release.Status(t.Context(), db.Bun, sets)
	require.NoError(t, err)
	for _, m := range st {
		require.True(t, m.Applied, "%s stays applied", m.Version)
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
