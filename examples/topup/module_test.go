package topup_test

import (
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/postgres/pgconfig"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redaction"
	"github.com/july/template/core/sysconfig"
	"github.com/july/template/examples/topup"
)

// The modules plug into the graph apps/api and apps/relay provide: routes
// on the api_v1 group, the access-log policies, the error mapper and the
// consumer.
func TestModulesWireIntoAppGraphs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{guard: downGuard(t)})
	echoSrv := echo.New()
	var (
		routes    []accesslog.Route
		mappers   []httpx.ErrorMapper
		consumers []queue.Consumer
	)
	app := fxtest.New(t,
		fx.NopLogger,
		fx.Supply(e.db, slog.New(slog.NewTextHandler(io.Discard, nil))),
		fx.Provide(
			func() ports.Guard { return downGuard(t) },
			func() ports.Clock { return ports.ClockFunc(time.Now) },
			func() (*configsvc.Service, error) { // apps/api's, over the service's one registry
				reg := sysconfig.NewRegistry()
				if err := reg.Register(topup.ConfigSpecs()...); err != nil {
					return nil, err
				}
				store, err := pgconfig.NewStore(e.db, pgoutbox.NewEventAuditWriter(pgoutbox.AuditConfig{}))
				if err != nil {
					return nil, err
				}
				return configsvc.New(reg, store, nil, ports.SystemClock, configsvc.Options{})
			},
			fx.Annotate(func() *echo.Group { return echoSrv.Group("/api/v1") }, fx.ResultTags(`name:"api_v1"`)),
		),
		topup.APIModule,
		topup.RelayModule,
		fx.Invoke(fx.Annotate(func(r []accesslog.Route, m []httpx.ErrorMapper, c []queue.Consumer) {
			routes, mappers, consumers = r, m, c
		}, fx.ParamTags(`group:"access_routes"`, `group:"error_mappers"`, queue.ConsumerGroup))),
	)
	app.RequireStart().RequireStop()

	var served []string
	for _, r := range echoSrv.Routes() {
		served = append(served, r.Method+" "+r.Path)
	}
	slices.Sort(served)
	require.Equal(t, []string{"GET /api/v1/topups/:id", "GET /api/v1/wallets/me", "POST /api/v1/topups"}, served)
	require.ElementsMatch(t, []accesslog.Route{
		{Path: "/api/v1/topups", RoutePolicy: accesslog.RoutePolicy{Policy: redaction.PolicyPayment}},
		{Path: "/api/v1/topups/:id", RoutePolicy: accesslog.RoutePolicy{Policy: redaction.PolicyPayment}},
	}, routes)
	require.Len(t, mappers, 1)
	mapped, ok := mappers[0](topup.ErrNotFound)
	require.True(t, ok)
	require.Equal(t, topup.CodeNotFound, mapped.Code)
	require.Len(t, consumers, 1)
	require.Equal(t, topup.EventCreated, consumers[0].EventType)
	require.NotNil(t, consumers[0].Handler)
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

	down, err := release.Down(t.Context(), db, sets, "20261201000011", 10*time.Second)
	require.NoError(t, err, "down: %+v", down)
	require.Equal(t, []string{"20261201100005", "20261201100004", "20261201100003", "20261201100002", "20261201100001"}, down.RolledBack)
	require.Empty(t, tables(), "rule: down removes every object up created")
}
