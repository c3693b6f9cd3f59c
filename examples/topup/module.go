package topup

import (
	"log/slog"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"
	"go.uber.org/fx"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
)

// APIModule adds the top-up use cases (*Service) and their routes to
// apps/api. It needs the app's *bun.DB, ports.Guard, ports.Clock,
// *configsvc.Service, *slog.Logger and the authenticated
// `name:"api_v1"` *echo.Group, and contributes to the
// `group:"access_routes"` and `group:"error_mappers"` value groups.
var APIModule = fx.Module("examples.topup.api",
	fx.Provide(
		newModuleService,
		newModuleAPI,
		fx.Annotate(AccessRoutes, fx.ResultTags(`group:"access_routes,flatten"`)),
		fx.Annotate(func() httpx.ErrorMapper { return MapError }, fx.ResultTags(`group:"error_mappers"`)),
	),
	fx.Invoke(fx.Annotate(func(g *echo.Group, a *API) { a.Register(g) }, fx.ParamTags(`name:"api_v1"`, ``))),
)

// RelayModule adds the topup.created consumer to apps/relay's worker and
// registers ex_topup_order's idempotency records with the relay's
// retention job (ports.IdempotencyTableGroup). It needs the app's
// *bun.DB, ports.Clock and *slog.Logger.
var RelayModule = fx.Module("examples.topup.relay",
	fx.Provide(
		queue.AsConsumer(newModuleConsumer),
		fx.Annotate(NewIdempotencyTable, fx.ResultTags(ports.IdempotencyTableGroup)),
	),
)

// SweepName labels ex_topup_order in the idempotency retention's logs and
// metrics.
const SweepName = "topup.order"

// NewIdempotencyTable registers ex_topup_order with the relay's
// idempotency retention (core/sweep.IdempotencyRetention): after the
// window an order keeps its row and loses its key and stored response, so
// the same create request sent again is a new order. An order has no
// other business key, so nothing refuses that second order: a client must
// not retry a create later than the window.
func NewIdempotencyTable(db *bun.DB) (ports.IdempotencyTable, error) {
	records, err := pgidem.NewExpirer(db, tableOrder)
	if err != nil {
		return ports.IdempotencyTable{}, err
	}
	return ports.IdempotencyTable{Name: SweepName, Records: records}, nil
}

func newModuleService(db *bun.DB, clock ports.Clock, cfg *configsvc.Service) (*Service, error) {
	links, err := NewRandomPayLinks()
	if err != nil {
		return nil, err
	}
	return NewService(ServiceConfig{DB: db, PayLinks: links, Clock: clock, Config: cfg})
}

func newModuleAPI(svc *Service, guard ports.Guard, log *slog.Logger) (*API, error) {
	return NewAPI(APIConfig{Service: svc, Guard: guard, Logger: log})
}

func newModuleConsumer(db *bun.DB, clock ports.Clock, log *slog.Logger) (queue.Consumer, error) {
	c, err := NewCrediter(db, clock, log)
	if err != nil {
		return queue.Consumer{}, err
	}
	return c.Consumer(), nil
}
