package release_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres/release"
)

func TestSplitStatements(t *testing.T) {
	t.Parallel()

	sql := `-- a comment; with a semicolon
CREATE TABLE t (a text DEFAULT 'x;y', "b;c" int); /* block ; /* nested ; */ still */
CREATE FUNCTION f() RETURNS trigger AS $body$ BEGIN RAISE 'a;b'; RETURN NEW; END $body$ LANGUAGE plpgsql;
-- migrate:allow lint_index_not_concurrent: table is empty until the feature ships
CREATE INDEX ix ON t (a);
INSERT INTO t VALUES (E'it\'s; fine', 1)`
	got := release.SplitStatements(sql)
	require.Len(t, got, 4, "%+v", got)
	require.Equal(t, `CREATE TABLE t (a text DEFAULT 'x;y', "b;c" int)`, got[0].SQL)
	require.Equal(t, 2, got[0].Line)
	require.Contains(t, got[1].SQL, "RETURN NEW; END $body$ LANGUAGE plpgsql")
	require.Equal(t, "CREATE INDEX ix ON t (a)", got[2].SQL)
	require.Equal(t, map[string]string{"lint_index_not_concurrent": "table is empty until the feature ships"}, got[2].Allow)
	require.Empty(t, got[1].Allow, "a directive applies to the next statement only")
	require.Equal(t, `INSERT INTO t VALUES (E'it\'s; fine', 1)`, got[3].SQL)
	require.Equal(t, 6, got[3].Line)
}
