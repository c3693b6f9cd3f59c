package release_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/release"
)

// The release step reads the same schema the same way on every supported
// server version (14 to 18; `make test-pg-matrix` runs these tests on
// each): a schema.json recorded on one version holds on the others, and
// check, up and verify give the same verdicts.

// notNullSet creates NOT NULL columns every way a migration can: in
// CREATE TABLE, through a primary key and an identity, with SET NOT NULL and
// DROP NOT NULL, and with ADD COLUMN on a table that exists (PostgreSQL 18
// records each as a pg_constraint row of its own).
func notNullSet() release.Set {
	return testSet("test/notnull", map[string]string{
		"20990601000001_create_item": `CREATE TABLE tb_vt_item (id bigint PRIMARY KEY, code text NOT NULL, note text,
				qty int NOT NULL DEFAULT 0 CHECK (qty >= 0), seq bigint GENERATED ALWAYS AS IDENTITY);
			ALTER TABLE tb_vt_item ALTER COLUMN note SET NOT NULL;
			ALTER TABLE tb_vt_item ALTER COLUMN code DROP NOT NULL`,
		"20990601000002_add_ref": `ALTER TABLE tb_vt_item ADD COLUMN ref text NOT NULL DEFAULT ''`,
	})
}

// notNullSnapshot is notNullSet's schema.json, as any version records it.
const notNullSnapshot = `{
  "20990601000001": {
    "name": "create_item",
    "creates": {
      "column:tb_vt_item.code": {
        "def": "text null",
        "table": "tb_vt_item"
      },
      "column:tb_vt_item.id": {
        "def": "bigint not null",
        "table": "tb_vt_item"
      },
      "column:tb_vt_item.note": {
        "def": "text not null",
        "table": "tb_vt_item"
      },
      "column:tb_vt_item.qty": {
        "def": "integer not null default 0",
        "table": "tb_vt_item"
      },
      "column:tb_vt_item.seq": {
        "def": "bigint not null generated always as identity",
        "table": "tb_vt_item"
      },
      "constraint:tb_vt_item.tb_vt_item_pkey": {
        "def": "PRIMARY KEY (id)",
        "table": "tb_vt_item"
      },
      "constraint:tb_vt_item.tb_vt_item_qty_check": {
        "def": "CHECK ((qty >= 0))",
        "table": "tb_vt_item"
      },
      "index:tb_vt_item_pkey": {
        "def": "CREATE UNIQUE INDEX tb_vt_item_pkey ON tb_vt_item USING btree (id)",
        "table": "tb_vt_item"
      },
      "table:tb_vt_item": {
        "def": "table"
      }
    },
    "alters": {},
    "drops": []
  },
  "20990601000002": {
    "name": "add_ref",
    "creates": {
      "column:tb_vt_item.ref": {
        "def": "text not null default ''::text",
        "table": "tb_vt_item"
      }
    },
    "alters": {},
    "drops": []
  }
}
`

func TestNotNullReadsTheSameOnEveryServerVersion(t *testing.T) {
	t.Parallel()

	db := emptyDB(t)
	set := notNullSet()
	snaps, err := release.TakeSnapshot(t.Context(), db.Bun, []release.Set{release.Foundation(), set})
	require.NoError(t, err)
	got, err := snaps[set.Name].Encode()
	require.NoError(t, err)
	require.JSONEq(t, notNullSnapshot, string(got), "server %d: the rehearsal must read NOT NULL as part of the column, never as a constraint object", serverVersion(t, db.Bun))

	// The recorded snapshot holds: check passes, up applies, verify is clean.
	set.FS.(fstest.MapFS)[release.SnapshotFile] = &fstest.MapFile{Data: []byte(notNullSnapshot)}
	sets := []release.Set{release.Foundation(), set}
	r, err := release.Check(t.Context(), db.Bun, sets)
	require.NoError(t, err)
	require.True(t, r.OK(), "check on a fresh database: %v", codes(r))
	require.NotContains(t, strings.Join(codes(r), " "), "snapshot_stale")
	up(t, db.Bun, sets)
	v, err := release.Verify(t.Context(), db.Bun, sets)
	require.NoError(t, err)
	require.True(t, v.OK(), "verify after up: %v", codes(v))
	require.Empty(t, codes(v))

	// Drift of a NOT NULL is a change of its column, on every version.
	exec(t, db.Bun, `ALTER TABLE tb_vt_item ALTER COLUMN note DROP NOT NULL`)
	exec(t, db.Bun, `ALTER TABLE tb_vt_item ALTER COLUMN code SET NOT NULL`)
	r, err = release.Check(t.Context(), db.Bun, sets)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"violation:schema_drift:column:tb_vt_item.note", "violation:schema_drift:column:tb_vt_item.code"}, codes(r))
}

// PostgreSQL 18 can add a NOT NULL as NOT VALID (no scan, a later VALIDATE
// takes no lock that blocks writes); older versions refuse the syntax. The
// rehearsal reads it as the column's "not null not valid", lint lets it
// pass like a NOT VALID CHECK, and drift reports it unvalidated.
func TestNotValidNotNull(t *testing.T) {
	t.Parallel()

	db := emptyDB(t)
	create := `CREATE TABLE tb_vt_item (id bigint PRIMARY KEY, note text)`
	sets := []release.Set{release.Foundation(), testSet("test/nn", map[string]string{"20990602000001_create_item": create})}
	up(t, db.Bun, sets)

	pending := []release.Set{release.Foundation(), testSet("test/nn", map[string]string{
		"20990602000001_create_item": create,
		"20990602000002_add_ref": `ALTER TABLE tb_vt_item ADD COLUMN ref text;
			ALTER TABLE tb_vt_item ADD CONSTRAINT tb_vt_item_ref_nn NOT NULL ref NOT VALID`,
	})}
	r, err := release.Check(t.Context(), db.Bun, pending)
	require.NoError(t, err)
	if serverVersion(t, db.Bun) < 180000 {
		require.Equal(t, []string{"violation:migration_rehearsal_failed:20990602000002"}, codes(r),
			"before PostgreSQL 18 a NOT VALID NOT NULL is a syntax error, reported by the rehearsal")
	} else {
		require.True(t, r.OK(), "a NOT VALID NOT NULL on a table that exists scans nothing: no lint_set_not_null: %v", codes(r))
		man, err := release.BuildManifest(t.Context(), db.Bun, pending)
		require.NoError(t, err)
		require.Equal(t, []string{"20990602000002"}, man.Owners("column:tb_vt_item.ref"))
		require.Empty(t, man.Owners("constraint:tb_vt_item.tb_vt_item_ref_nn"), "a NOT NULL is never a constraint object")
		snaps, err := release.TakeSnapshot(t.Context(), db.Bun, pending)
		require.NoError(t, err)
		require.Equal(t, release.Object{Def: "text not null not valid", Table: "tb_vt_item", Invalid: true}, snaps["test/nn"]["20990602000002"].Created["column:tb_vt_item.ref"])
	}

	// Changed by hand on the live table: drift on every version; on 18 a
	// NOT VALID one is also reported unvalidated.
	plant, want := `ALTER TABLE tb_vt_item ALTER COLUMN note SET NOT NULL`, []string{"violation:schema_drift:column:tb_vt_item.note"}
	if serverVersion(t, db.Bun) >= 180000 {
		plant = `ALTER TABLE tb_vt_item ADD CONSTRAINT tb_vt_item_note_nn NOT NULL note NOT VALID`
		want = append(want, "violation:constraint_not_validated:column:tb_vt_item.note")
	}
	exec(t, db.Bun, plant)
	r, err = release.Check(t.Context(), db.Bun, sets)
	require.NoError(t, err)
	require.ElementsMatch(t, want, codes(r))
}

// serverVersion is the server's server_version_num.
func serverVersion(t *testing.T, db *bun.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT current_setting('server_version_num')::int`).Scan(&n))
	return n
}

// The rehearsal counts cluster-wide objects (roles) before and after each
// statement; a role another session creates meanwhile (a DBA, or the
// owner test next door) is not the migration's doing.
func TestRehearsalIgnoresOtherSessionsCommits(t *testing.T) {
	t.Parallel()

	db := emptyDB(t)
	const lockKey = 2099060301
	hold, err := db.Bun.Conn(t.Context())
	require.NoError(t, err)
	defer func() { _ = hold.Close() }()
	_, err = hold.ExecContext(t.Context(), `SELECT pg_advisory_lock(?)`, lockKey)
	require.NoError(t, err)

	set := testSet("test/wait", map[string]string{
		"20990603000001_waits": `CREATE TABLE tb_vt_wait (id bigint PRIMARY KEY);
			SELECT pg_advisory_xact_lock(` + fmt.Sprint(lockKey) + `);
			CREATE INDEX tb_vt_wait_ix ON tb_vt_wait (id)`,
	})
	type result struct {
		r   *release.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := release.Check(context.Background(), db.Bun, []release.Set{release.Foundation(), set})
		done <- result{r, err}
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		_ = db.Bun.QueryRowContext(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = ?)`, lockKey).Scan(&waiting)
		return waiting
	}, 2*time.Minute, 20*time.Millisecond, "the rehearsal reaches the statement that waits") // generous: a busy CI machine

	b := make([]byte, 6)
	_, _ = rand.Read(b)
	role := "t_other_" + hex.EncodeToString(b)
	exec(t, db.Bun, `CREATE ROLE `+role+` NOLOGIN`)
	defer exec(t, db.Bun, `DROP ROLE `+role)
	_, err = hold.ExecContext(t.Context(), `SELECT pg_advisory_unlock(?)`, lockKey)
	require.NoError(t, err)

	res := <-done
	require.NoError(t, res.err)
	require.True(t, res.r.OK(), "a role created by another session meanwhile: %v", codes(res.r))
}
