package topup_test

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/examples/topup"
	"github.com/july/template/internal/pgtopo"
)

// Regression: a failing (or cancelled) create wrote the order's private
// pay_url, with its sign, into the Postgres server log: bun formats every
// argument into the statement text and Postgres logs the text of a
// failing statement by default. The pay_url and the stored answer (which
// holds it) are bound parameters now, so the server log of a private
// server, on its default settings and the api's production pool, holds
// the failing statements without them.
func TestFailingCreateKeepsPayURLOutOfTheServerLog(t *testing.T) {
	t.Parallel()
	pair := pgtopo.Start(t)
	db, err := postgres.Open(t.Context(), postgres.Config{URL: "postgres://postgres@" + pair.Primary + "/postgres?sslmode=disable"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, postgres.MigrateWith(topup.MigrationsFS)(t.Context(), db))
	links, err := topup.NewPayLinks(topup.DefaultPayBaseURL, []byte("pay-link-test-key-0123456789abcdef"))
	require.NoError(t, err)
	svc, err := topup.NewService(topup.ServiceConfig{DB: db, PayLinks: links})
	require.NoError(t, err)
	agent := topup.Actor{Subject: "agent-log", Roles: []string{topup.RoleAgent}}
	req := topup.CreateRequest{AmountCents: 2500, Channel: topup.ChannelAlipay}

	// Each planted trigger fails one statement that carries the link: the
	// one writing pay_url, then the one storing the answer.
	for i, when := range []string{"NEW.pay_url <> ''", "NEW.idem_response_status IS NOT NULL"} {
		_, err = db.ExecContext(t.Context(), `CREATE OR REPLACE FUNCTION t_fail() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'planted failure'; END $$;
DROP TRIGGER IF EXISTS t_fail ON ex_topup_order;
CREATE TRIGGER t_fail BEFORE INSERT OR UPDATE ON ex_topup_order FOR EACH ROW WHEN (`+when+`) EXECUTE FUNCTION t_fail()`)
		require.NoError(t, err)
		key := "log-req-000" + string(rune('1'+i))
		_, err = svc.Create(context.WithoutCancel(t.Context()), agent, topup.CreateCommand{Key: createKey(t, agent.Subject, key, req), Request: req})
		require.ErrorContains(t, err, "planted failure", "trigger %s", when)
	}

	// Wait until the server logged both failures (bounded by progress).
	var log string
	for range 200 {
		if log = pair.PrimaryLog(t); strings.Count(log, "planted failure") >= 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.GreaterOrEqual(t, strings.Count(log, "planted failure"), 2, "both failures are logged:\n%s", log)
	require.Contains(t, log, "STATEMENT:", "the failing statements' text is logged (the default setting)")
	require.NotContains(t, log, "sign=", "rule: no pay_url signature in the server log:\n%s", log)
	require.NotContains(t, log, topup.DefaultPayBaseURL, "rule: no pay_url in the server log")
	require.NotContains(t, log, hex.EncodeToString([]byte("sign=")), "rule: nor the stored answer holding it (bytea text is hex)")
}
