package topup_test

import (
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/postgres/pgconfig"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/apps/domain"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redaction"
	"github.com/july/template/core/sysconfig"
	"github.com/july/template/examples/topup"
)

// The domain plugs into apps/api and apps/relay: routes on the /api/v1
// group, the access-log policies, the error mapper, the consumer and the
// idempotency table; its migration set and config keys are apps/migrate's.
func TestDomainPlugsIntoTheApps(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{guard: downGuard(t)})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := sysconfig.NewRegistry() // apps/api's, over the service's one registry
	require.NoError(t, reg.Register(topup.ConfigSpecs()...))
	store, err := pgconfig.NewStore(e.db, pgoutbox.NewEventAuditWriter(pgoutbox.AuditConfig{}))
	require.NoError(t, err)
	cfg, err := configsvc.New(reg, store, nil, ports.SystemClock, configsvc.Options{})
	require.NoError(t, err)
	d := topup.Domain()
	require.Equal(t, "examples/topup", d.Name)
	require.Equal(t, topup.Migrations().Name, d.Migrations.Name)
	require.Equal(t, topup.ConfigSpecs(), d.ConfigSpecs)

	api, err := d.API(domain.APIDeps{DB: e.db, Clock: ports.ClockFunc(time.Now), Config: cfg, Guard: downGuard(t), Logger: log})
	require.NoError(t, err)
	echoSrv := echo.New()
	api.Register(echoSrv.Group("/api/v1"))
	var served []string
	for _, r := range echoSrv.Routes() {
		served = append(served, r.Method+" "+r.Path)
	}
	slices.Sort(served)
	require.Equal(t, []string{"GET /api/v1/topups/:id", "GET /api/v1/wallets/me", "POST /api/v1/topups"}, served)
	pay := accesslog.RoutePolicy{
		Policy:    redaction.PolicyPayment,
		Safe:      []string{"topup_id", "order_id", "channel", "amount_cents", "status", "created_at", "updated_at"},
		Correlate: []string{"agent_id"},
	}
	require.ElementsMatch(t, []accesslog.Route{
		{Path: "/api/v1/topups", RoutePolicy: pay},
		{Path: "/api/v1/topups/:id", RoutePolicy: pay},
	}, api.AccessRoutes)
	require.NotNil(t, api.ErrorMapper)
	mapped, ok := api.ErrorMapper(topup.ErrNotFound)
	require.True(t, ok)
	require.Equal(t, topup.CodeNotFound, mapped.Code)

	relay, err := d.Relay(domain.RelayDeps{DB: e.db, Clock: ports.ClockFunc(time.Now), Config: cfg, Logger: log})
	require.NoError(t, err)
	require.Len(t, relay.Consumers, 2)
	require.Equal(t, topup.EventCreated, relay.Consumers[0].EventType)
	require.NotNil(t, relay.Consumers[0].Handler)
	require.Equal(t, topup.EventReconcileDue, relay.Consumers[1].EventType, "the daily reconciliation's consumer")
	require.Len(t, d.Commands, 1)
	require.Equal(t, topup.ReconcileCommand, d.Commands[0].Name)
	require.Empty(t, relay.TaskTables)
	require.Len(t, relay.IdempotencyTables, 1)
	require.Equal(t, topup.SweepName, relay.IdempotencyTables[0].Name)
}

// The set passes the release step apps/migrate runs: check, apply,
// verify, and a data-safe rollback to the foundation.
func TestMigrationsReleaseUpAndDown(t *testing.T) {
	t.Parallel()
	set := topup.Migrations()
	require.Equal(t, "examples/topup", set.Name)
	sets := []release.Set{release.Foundation(), set}
	db := testinfra.NewDB(t, testinfra.DBOpts{}).Bun
	tables := func() []string {
		var names []string
		require.NoError(t, db.NewRaw(`SELECT table_name FROM information_schema.tables
			WHERE table_schema = current_schema() AND table_name LIKE 'ex\_topup\_%' ORDER BY 1`).Scan(t.Context(), &names))
		return names
	}

	up, err := release.Up(t.Context(), db, sets, 10*time.Second)
	require.NoError(t, err, "up: %+v", up)
	require.Subset(t, up.Applied, []string{"20261201100001", "20261201100002", "20261201100003"})
	require.Equal(t, []string{"ex_topup_ledger", "ex_topup_order", "ex_topup_wallet"}, tables())
	rep, err := release.Check(t.Context(), db, sets)
	require.NoError(t, err)
	require.True(t, rep.OK(), "findings %+v", rep.Findings)

	down, err := release.Down(t.Context(), db, sets, "20261201000015", 10*time.Second)
	require.NoError(t, err, "down: %+v", down)
	require.Equal(t, []string{"20261201100005", "20261201100004", "20261201100003", "20261201100002", "20261201100001"}, down.RolledBack)
	require.Empty(t, tables(), "rule: down removes every object up created")
}
