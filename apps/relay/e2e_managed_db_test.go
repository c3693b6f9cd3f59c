package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/apps/internal/testdomain"
	"github.com/july/template/contracttests/testinfra"
)

// A MANAGED DATABASE: the owner role `migrate` runs as is no superuser;
// the api and the relay run as roles holding only
// deploy/postgres/runtime-grants.sql's grants (data access, no DDL); the
// server imposes statement_timeout, idle_in_transaction_session_timeout and
// China time on every session, and the hosts are in China time too. The
// release step builds the schema, the test domain's orders are created
// through the api and applied by the relay's consumer, and every delivery
// is recorded.
func TestE2EManagedDatabase(t *testing.T) {
	t.Parallel()
	const n = 40
	r := testinfra.NewRedis(t)
	db := testinfra.NewDB(t, testinfra.DBOpts{})
	exec1 := func(q string) {
		t.Helper()
		_, err := db.Bun.ExecContext(t.Context(), q)
		require.NoError(t, err, q)
	}
	suffix := make([]byte, 5)
	_, _ = rand.Read(suffix)
	owner, apiRole, relayRole := "t_own_"+hex.EncodeToString(suffix), "t_api_"+hex.EncodeToString(suffix), "t_rel_"+hex.EncodeToString(suffix)
	for _, role := range []string{owner, apiRole, relayRole} {
		exec1(`CREATE ROLE ` + role + ` LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS`)
	}
	t.Cleanup(func() {
		for _, role := range []string{apiRole, relayRole, owner} {
			for _, q := range []string{`REASSIGN OWNED BY ` + role + ` TO CURRENT_USER`, `DROP OWNED BY ` + role, `DROP ROLE ` + role} {
				if _, err := db.Bun.ExecContext(context.Background(), q); err != nil {
					t.Errorf("%s: %v", q, err)
				}
			}
		}
	})
	exec1(`ALTER DATABASE ` + db.Name + ` OWNER TO ` + owner)
	for _, set := range []string{`timezone = 'Asia/Shanghai'`, `statement_timeout = '20s'`, `idle_in_transaction_session_timeout = '20s'`} {
		exec1(`ALTER DATABASE ` + db.Name + ` SET ` + set)
	}
	as := func(role string) string {
		u, err := url.Parse(db.URL)
		require.NoError(t, err)
		u.User = url.User(role)
		return u.String()
	}

	c := exec.Command(migrateBin(t), "up")
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "TZ=Asia/Shanghai", "DATABASE_URL=" + as(owner)}
	out, err := c.CombinedOutput()
	require.NoError(t, err, "migrate up as the non-superuser owner:\n%s", out)

	grants, err := os.ReadFile("../../deploy/postgres/runtime-grants.sql")
	require.NoError(t, err)
	ownerDB := openAs(t, as(owner))
	for _, role := range []string{apiRole, relayRole} {
		// what psql -v owner=... -v role=... does to the file
		sql := strings.NewReplacer(`:"owner"`, `"`+owner+`"`, `:"role"`, `"`+role+`"`).Replace(string(grants))
		_, err := ownerDB.ExecContext(t.Context(), sql)
		require.NoError(t, err, "deploy/postgres/runtime-grants.sql for %s, as the owner", role)
	}
	var super, creates bool
	require.NoError(t, db.Bun.QueryRowContext(t.Context(),
		`SELECT bool_or(rolsuper), bool_or(has_schema_privilege(rolname, 'public', 'CREATE')) FROM pg_roles WHERE rolname IN (?, ?)`,
		apiRole, relayRole).Scan(&super, &creates))
	require.False(t, super, "runtime roles are no superusers")
	if !creates { // PostgreSQL 14 still grants CREATE on public to PUBLIC (the platform revokes it)
		_, err = openAs(t, as(apiRole)).ExecContext(t.Context(), `DROP TABLE tb_outbox_event`)
		require.ErrorContains(t, err, "must be owner", "the api's role cannot change the schema")
	}

	w := &world{t: t, db: db, redisURL: r.URL, queue: r.QueueName("e2e")}
	t.Cleanup(func() { deleteQueue(t, r.URL, w.queue) })
	tz := "TZ=Asia/Shanghai"
	relay := w.startRelay("relay-managed", tz, "DATABASE_URL="+as(relayRole), "WORKER_ENABLED=true")
	orders := createOrders(t, w, n, 4, tz, "DATABASE_URL="+as(apiRole))
	require.Len(t, orders, n)
	w.waitCountProgress(n, appliedOrders)
	w.waitCountProgress(n, `SELECT count(*) FROM tb_outbox_consumption WHERE consumer = ?`, testdomain.ConsumerName)
	requireAppliedOnce(t, w, orders)
	require.Zero(t, w.count(`SELECT count(*) FROM tb_outbox_event WHERE delivered_at IS NULL`), "every event delivered")
	require.NotContains(t, relay.logs.String(), "permission denied", "the relay needed a grant it does not hold")
	require.NotContains(t, relay.logs.String(), "canceling statement", "the relay hit the server's statement_timeout")
}

// openAs opens a small pool with url's role, closed when the test ends.
func openAs(t *testing.T, url string) *bun.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), postgres.Config{URL: url, MaxOpenConns: 2})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}
