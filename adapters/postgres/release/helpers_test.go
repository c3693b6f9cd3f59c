package release_test

import (
	"context"
	"fmt"
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
// optional down SQL under version+".down").
func testSet(name string, files map[string]string, rules ...release.Rule) release.Set {
	fsys := fstest.MapFS{}
	for k, v := range files {
		if base, ok := strings.CutSuffix(k, ".down"); ok {
			fsys[base+".tx.down.sql"] = &fstest.MapFile{Data: []byte(v)}
			continue
		}
		fsys[k+".tx.up.sql"] = &fstest.MapFile{Data: []byte(v)}
	}
	return release.Set{Name: name, FS: fsys, Rules: rules}
}

// fingerprint hashes the schema catalog and every row of every table in
// the current schema, so a test can prove a command wrote nothing.
func fingerprint(t *testing.T, db bun.IDB) string {
	t.Helper()
	ctx := context.Background()
	var schema string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT coalesce(md5(string_agg(x, E'\n' ORDER BY x)), '') FROM (
		SELECT 'rel:' || relname || ':' || relkind::text FROM pg_class WHERE relnamespace = current_schema()::regnamespace
		UNION ALL SELECT 'con:' || conname || ':' || pg_get_constraintdef(oid) || convalidated FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
		UNION ALL SELECT 'idx:' || pg_get_indexdef(indexrelid) || indisvalid FROM pg_index WHERE indrelid IN (SELECT oid FROM pg_class WHERE relnamespace = current_schema()::regnamespace)
		UNION ALL SELECT 'col:' || c.relname || '.' || a.attname || format_type(a.atttypid, a.atttypmod) || a.attnotnull
			FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
			WHERE c.relnamespace = current_schema()::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
	) s(x)`).Scan(&schema))
	var tables []string
	require.NoError(t, db.NewRaw(`SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`).Scan(ctx, &tables))
	parts := []string{schema}
	for _, tb := range tables {
		var h string
		require.NoError(t, db.QueryRowContext(ctx, fmt.Sprintf(`SELECT coalesce(md5(string_agg(t::text, ',' ORDER BY t::text)), '') FROM %q t`, tb)).Scan(&h))
		parts = append(parts, tb+"="+h)
	}
	return strings.Join(parts, ";")
}

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
