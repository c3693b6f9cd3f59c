package main

import (
	"bytes"
	"io/fs"
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
// set the apps list (the foundation's, every domain's), so regenerating it
// is one command (`migrate snapshot SET > <its migrations>/schema.json`)
// and a stale file fails this test; no object is created with an empty
// definition.
func TestSnapshotCommandPrintsCommittedFiles(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{})
	sets := migrationSets()
	snaps, err := release.TakeSnapshot(t.Context(), testinfra.NewDB(t, testinfra.DBOpts{}).Bun, sets)
	require.NoError(t, err)
	for _, s := range sets {
		for v, step := range snaps[s.Name] {
			for obj, o := range step.Created {
				require.NotEmpty(t, o.Def, "set %s: migration %s creates %s with an empty definition", s.Name, v, obj)
			}
		}
		var out, errb bytes.Buffer
		code := run(t.Context(), []string{"snapshot", s.Name}, func(k string) string {
			return map[string]string{"DATABASE_URL": db.URL}[k]
		}, &out, &errb)
		require.Equal(t, exitOK, code, "snapshot %s: %s", s.Name, errb.String())
		want, err := fs.ReadFile(s.FS, release.SnapshotFile)
		require.NoError(t, err, "set %s embeds no %s; run `migrate snapshot %s` into its migrations directory and embed it", s.Name, release.SnapshotFile, s.Name)
		require.JSONEq(t, string(want), out.String(), "set %s: its %s is stale; regenerate it with `migrate snapshot %s`", s.Name, release.SnapshotFile, s.Name)
	}
}

// Every migration of every set the apps list states its rollback boundary
// (a down file, or forward-only with a reason): release.Check finds none
// without (adapters/postgres/release tests the rule itself).
func TestDomainSetsHaveRollbackBoundaries(t *testing.T) {
	t.Parallel()

	r, err := release.Check(t.Context(), testinfra.NewDB(t, testinfra.DBOpts{}).Bun, migrationSets())
	require.NoError(t, err)
	require.NotEmpty(t, r.Pending)
	for _, f := range r.Findings {
		require.NotContains(t, f.Code, "rollback_boundary", "%+v", f)
	}
	require.True(t, r.OK(), "%+v", r.Findings)
}
