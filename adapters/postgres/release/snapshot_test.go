package release_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres/release"
)

// TestSnapshotsMatchSQL fails when the foundation's schema.json no longer
// describes what its SQL does (apps/migrate checks every domain's:
// TestSnapshotCommandPrintsCommittedFiles). Regenerate with `migrate
// snapshot foundation` or
// UPDATE_SCHEMA_SNAPSHOT=1 go test ./adapters/postgres/release -run TestSnapshotsMatchSQL
func TestSnapshotsMatchSQL(t *testing.T) {
	t.Parallel()

	db := emptyDB(t)
	sets := []release.Set{release.Foundation()}
	paths := map[string]string{
		release.FoundationName: "../migrations/",
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
