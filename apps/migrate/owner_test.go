package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/contracttests/testinfra"
)

// A managed database's owner is no superuser: it owns the database and
// nothing else. The release step works with such a role on every supported
// version (make test-pg-matrix): check, up, verify, down, up
// again and the config seed.
func TestNonSuperuserOwnerReleases(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{})
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	role := "t_owner_" + hex.EncodeToString(b)
	exec := func(q string) {
		t.Helper()
		_, err := db.Bun.ExecContext(context.Background(), q)
		require.NoError(t, err, q)
	}
	exec(`CREATE ROLE ` + role + ` LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS`)
	t.Cleanup(func() {
		// Before the harness drops the database: hand back what the role owns.
		for _, q := range []string{`REASSIGN OWNED BY ` + role + ` TO CURRENT_USER`, `DROP OWNED BY ` + role, `DROP ROLE ` + role} {
			if _, err := db.Bun.ExecContext(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	exec(`ALTER DATABASE ` + db.Name + ` OWNER TO ` + role)

	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	u.User = url.User(role)
	owner := &testinfra.DB{Name: db.Name, URL: u.String()}
	sets := migrationSets()
	for _, args := range [][]string{{"check"}, {"up"}, {"verify"}, {"down", "--to", "0"}, {"up"}, {"backfill", "seed-system-config"}, {"verify"}} {
		r := migrateCLI(t, owner, sets, args...)
		require.Equal(t, exitOK, r.code, "migrate %v as a non-superuser owner:\n%s\n%s", args, r.stdout, r.stderr)
	}
	var super bool
	require.NoError(t, db.Bun.QueryRowContext(t.Context(), `SELECT rolsuper FROM pg_roles WHERE rolname = ?`, role).Scan(&super))
	require.False(t, super)
	var tableOwner string
	require.NoError(t, db.Bun.QueryRowContext(t.Context(), `SELECT tableowner FROM pg_tables WHERE tablename = 'tb_outbox_event'`).Scan(&tableOwner))
	require.Equal(t, role, tableOwner, "the owner role created the tables")
}
