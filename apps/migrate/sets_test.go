package main

import (
	"bytes"
	"io/fs"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/contracttests/testinfra"
)

// The shipped sets (foundation first, then the wired domains) apply to an
// empty database, every migration of every set is recorded, verify passes,
// and a second up finds nothing to do.
func TestMigrationSetsApplyOnEmptyDatabase(t *testing.T) {
	t.Parallel()

	sets := migrationSets()
	require.Equal(t, release.FoundationName, sets[0].Name, "the foundation set goes first")
	var want int64
	for _, s := range sets {
		ups, err := fs.Glob(s.FS, "*.up.sql")
		require.NoError(t, err, "set %s", s.Name)
		require.NotEmpty(t, ups, "set %s has no migrations", s.Name)
		want += int64(len(ups))
	}
	db := testinfra.NewDB(t, testinfra.DBOpts{})
	r := migrateCLI(t, db, sets, "up")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "verify: OK")
	require.Equal(t, want, count(t, db.Bun, `SELECT count(*) FROM bun_migrations`), "every set's migrations are applied")

	r = migrateCLI(t, db, sets, "up")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "nothing to apply")
}

// `migrate snapshot SET` prints exactly the committed schema.json of each
// set, so regenerating it is one command and a stale file fails this test.
func TestSnapshotCommandPrintsCommittedFiles(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{})
	for set, path := range map[string]string{
		"foundation":       "../../adapters/postgres/migrations/schema.json",
		"examples/topup":   "../../examples/topup/migrations/schema.json",   // examples: delete this line
		"examples/devices": "../../examples/devices/migrations/schema.json", // examples: delete this line
	} {
		var out, errb bytes.Buffer
		code := run(t.Context(), []string{"snapshot", set}, func(k string) string {
			return map[string]string{"DATABASE_URL": db.URL}[k]
		}, &out, &errb)
		require.Equal(t, exitOK, code, "snapshot %s: %s", set, errb.String())
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		require.JSONEq(t, string(want), out.String(), "set %s", set)
	}
}
