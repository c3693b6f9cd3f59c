package release_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/contracttests/testinfra"
)

// migrated returns a fresh database with the foundation applied.
func migrated(t *testing.T) *testinfra.DB {
	t.Helper()
	return testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
}

// testSet builds a test-only migration set from version -> up SQL (and
// optional down SQL under version+".down"). An up file without a down file
// ends with a forward-only marker, its rollback boundary (rawSet builds a
// set of exactly the files given).
func testSet(name string, files map[string]string, rules ...release.Rule) release.Set {
	fsys := fstest.MapFS{}
	for k, v := range files {
		if base, ok := strings.CutSuffix(k, ".down"); ok {
			fsys[base+".tx.down.sql"] = &fstest.MapFile{Data: []byte(v)}
			continue
		}
		if _, ok := files[k+".down"]; !ok {
			v += "\n" + forwardOnlyTest
		}
		fsys[k+".tx.up.sql"] = &fstest.MapFile{Data: []byte(v)}
	}
	return release.Set{Name: name, FS: fsys, Rules: rules}
}

// forwardOnlyTest is the rollback boundary of a test migration without a
// down file.
const forwardOnlyTest = "-- migrate:forward_only: test-only migration, never rolled back\n"

// fingerprint hashes the schema catalog and every row of every table in
// the current schema, so a test can prove a command wrote nothing.
func codes(r *release.Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, string(f.Severity)+":"+f.Code+":"+f.Object)
	}
	return out
}

func exec(t *testing.T, db bun.IDB, sql string) {
	t.Helper()
	_, err := db.ExecContext(context.Background(), sql)
	require.NoError(t, err, sql)
}

// codesOf is codes for a report that may be nil.
func codesOf(r *release.Report) []string {
	if r == nil {
		return nil
	}
	return codes(r)
}
