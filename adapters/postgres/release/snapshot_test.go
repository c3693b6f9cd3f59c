package release_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/examples"
)

// TestSnapshotsMatchSQL fails when a set's schema.json no longer describes
// what its SQL does. Regenerate with `migrate snapshot` or
// UPDATE_SCHEMA_SNAPSHOT=1 go test ./adapters/postgres/release -run TestSnapshotsMatchSQL
func TestSnapshotsMatchSQL(t *testing.T) {
	t.Parallel()

	db := emptyDB(t)
	sets := []release.Set{release.Foundation()}
	sets = append(sets, examples.MigrationSets()...) // examples: delete this line
	paths := map[string]string{
		release.FoundationName: "../migrations/",
		"examples/topup":       "../../../examples/topup/migrations/",   // examples: delete this line
		"examples/devices":     "../../../examples/devices/migrations/", // examples: delete this line
	}
	snaps, err := release.TakeSnapshot(t.Context(), db.Bun, sets)
	require.NoError(t, err)
	for _, s := range sets {
		dir, ok := paths[s.Name]
		require.True(t, ok, "no directory known for set %s", s.Name)
		snap := snaps[s.Name]
		require.NotEmpty(t, snap, "set %s", s.Name)
		for v, step := range snap {
			for obj, o := range step.Created {
				require.NotEmpty(t, o.Def, "migration %s creates %s with an empty definition", v, obj)
			}
		}
		b, err := snap.Encode()
		require.NoError(t, err)
		path := dir + release.SnapshotFile
		if os.Getenv("UPDATE_SCHEMA_SNAPSHOT") == "1" {
			require.NoError(t, os.WriteFile(path, b, 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "set %s has no %s; run `migrate snapshot`", s.Name, path)
		require.JSONEq(t, string(want), string(b), "schema snapshot of %s is stale; rerun with UPDATE_SCHEMA_SNAPSHOT=1 or `migrate snapshot`", s.Name)
	}
}
