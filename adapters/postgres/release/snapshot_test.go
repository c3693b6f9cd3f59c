package release_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres/release"
)

// TestSnapshotMatchesSQL fails when migrations/schema.json no longer
// describes what the foundation SQL creates. Regenerate it with
// UPDATE_SCHEMA_SNAPSHOT=1 go test ./adapters/postgres/release -run TestSnapshotMatchesSQL
func TestSnapshotMatchesSQL(t *testing.T) {
	t.Parallel()

	db := migrated(t)
	set := release.Foundation()
	man, err := release.BuildManifest([]release.Set{set})
	require.NoError(t, err)
	got, err := release.TakeSnapshot(t.Context(), db.Bun, man, set)
	require.NoError(t, err)
	for v, objs := range got {
		for obj, def := range objs {
			require.NotEmpty(t, def, "migration %s claims %s but the catalog has no such object", v, obj)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep <> readable in CHECK definitions
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(got))
	b := buf.Bytes()
	const path = "../migrations/" + release.SnapshotFile
	if os.Getenv("UPDATE_SCHEMA_SNAPSHOT") == "1" {
		require.NoError(t, os.WriteFile(path, b, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(b), "schema snapshot is stale; rerun with UPDATE_SCHEMA_SNAPSHOT=1")
}
