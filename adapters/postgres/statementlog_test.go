package postgres_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/internal/pgtopo"
)

// bun formats every argument into the statement text, so a failing
// statement's text carries user data, and Postgres logs it beside the
// error by default. deploy/postgres/statement-log.sql keeps it out: a role
// it was applied to logs the error without the statement; a role without
// it (the planted break) logs the user data.
func TestStatementTextStaysOutOfTheServerLog(t *testing.T) {
	t.Parallel()
	pair := pgtopo.Start(t)
	url := func(role string) string {
		return "postgres://" + role + "@" + pair.Primary + "/postgres?sslmode=disable"
	}
	super, err := postgres.Open(t.Context(), postgres.Config{URL: url("postgres")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = super.Close() })

	file, err := os.ReadFile("../../deploy/postgres/statement-log.sql")
	require.NoError(t, err)
	for _, role := range []string{"t_guarded", "t_plain"} {
		_, err := super.ExecContext(t.Context(), `CREATE ROLE `+role+` LOGIN NOSUPERUSER`)
		require.NoError(t, err)
	}
	// what psql -v role=t_guarded does to the file
	_, err = super.ExecContext(t.Context(), strings.ReplaceAll(string(file), `:"role"`, `"t_guarded"`))
	require.NoError(t, err, "deploy/postgres/statement-log.sql as a superuser")

	fail := func(role, userData string) {
		t.Helper()
		db, err := postgres.Open(t.Context(), postgres.Config{URL: url(role)})
		require.NoError(t, err)
		defer db.Close()
		_, err = db.NewRaw(`SELECT 1 / 0 WHERE ? <> ''`, userData).Exec(t.Context())
		require.ErrorContains(t, err, "division by zero", "the statement must fail on the server")
	}
	fail("t_guarded", "GUARDED-USER-DATA-7f3a")
	fail("t_plain", "PLAIN-USER-DATA-9c1e")

	// The server writes both errors to its log; wait until it has (the log
	// grows with every line, so a stalled log fails below, not a clock).
	var log string
	for i := 0; i < 200; i++ {
		log = pair.PrimaryLog(t)
		if strings.Count(log, "division by zero") >= 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, 2, strings.Count(log, "division by zero"), "both errors are still logged:\n%s", log)
	require.Contains(t, log, "PLAIN-USER-DATA-9c1e", "without the setting the statement and its user data are logged (the hazard)")
	require.NotContains(t, log, "GUARDED-USER-DATA-7f3a", "a role with deploy/postgres/statement-log.sql applied must not log statement text")
}
