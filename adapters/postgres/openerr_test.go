package postgres_test

import (
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/contracttests/testinfra"
)

// TestOpenErrorsAreSentences: every way the first connection can fail is
// an *OpenError that names the variable, says what went wrong and what to
// do, and never shows the password. (Two more, a TLS-less server and a
// refused startup parameter, are in the pooler tests: PgBouncer has them.)
func TestOpenErrorsAreSentences(t *testing.T) {
	t.Parallel()
	tdb := testinfra.NewDB(t, testinfra.DBOpts{})
	u, err := url.Parse(tdb.URL)
	require.NoError(t, err)
	with := func(f func(u *url.URL)) string {
		c := *u
		f(&c)
		return c.String()
	}
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })

	cases := []struct {
		name, url, env string
		reason, fix    string
	}{
		{"empty", "", "", "DATABASE_URL is empty", "set DATABASE_URL"},
		{"malformed", "postgres://u:hunter2@[::1/x", "", "not a valid postgres URL", "set DATABASE_URL to postgres://"},
		{"refused", "postgres://u:hunter2@127.0.0.1:1/x?sslmode=disable", "", "connection was refused", "or set DATABASE_URL to the address"},
		{"no answer", "postgres://u:hunter2@" + silent.Addr().String() + "/x?sslmode=disable&connect_timeout=10", "DATABASE_DIRECT_URL", "no answer within 1s", "check that DATABASE_DIRECT_URL"},
		{"no database", with(func(u *url.URL) { u.Path = "/" + tdb.Name + "_missing" }), "", "does not exist", "CREATE DATABASE"},
		{"no role", with(func(u *url.URL) { u.User = url.UserPassword("no_such_role_28", "hunter2") }), "", `role "no_such_role_28"`, "check the user in DATABASE_URL"},
	}
	for _, c := range cases {
		// Only the silent server needs the short ping: a loaded machine (the
		// containers gate) once took over 1 s to say "does not exist".
		ping := time.Minute
		if c.name == "no answer" {
			ping = time.Second
		}
		_, err := postgres.Open(t.Context(), postgres.Config{URL: c.url, Env: c.env, PingTimeout: ping})
		var oe *postgres.OpenError
		require.ErrorAs(t, err, &oe, c.name)
		env := c.env
		if env == "" {
			env = "DATABASE_URL"
		}
		require.Equal(t, env, oe.Variable(), c.name)
		require.Equal(t, "postgres", oe.Dependency())
		require.Contains(t, oe.Error(), "("+env+")", c.name)
		require.Contains(t, oe.Reason, c.reason, c.name)
		require.Contains(t, oe.Fix(), c.fix, c.name)
		require.NotContains(t, oe.Error()+oe.Fix(), "hunter2", "%s: never the password", c.name)
		require.False(t, strings.ContainsAny(oe.Error(), "\n"), "%s: one line", c.name)
	}
	_, err = postgres.Open(t.Context(), postgres.Config{})
	require.ErrorIs(t, err, postgres.ErrNoURL)
	_, err = postgres.Open(t.Context(), postgres.Config{URL: "postgres://u@127.0.0.1:1/x?sslmode=disable"})
	require.True(t, postgres.IsUnavailable(err), "a refused connection is still classified as unavailable")
}
