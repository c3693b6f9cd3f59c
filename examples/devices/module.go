package devices

import (
	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"
	"go.uber.org/fx"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
)

// APIModule wires the use cases (*Service) and the HTTP side into
// apps/api: the handlers on the
// authenticated `name:"api_v1"` group, the upload's access-log policy in
// `group:"access_routes"` and MapError in `group:"error_mappers"`. It
// needs *bun.DB, ports.Clock, ports.Guard and *slog.Logger from the app.
var APIModule = fx.Module("examples/devices/api",
	fx.Provide(
		fx.Annotate(newService, fx.ParamTags(``, ``, `optional:"true"`)),
		NewAPI,
		fx.Annotate(AccessRoutes, fx.ResultTags(`group:"access_routes,flatten"`)),
		fx.Annotate(func() httpx.ErrorMapper { return MapError }, fx.ResultTags(`group:"error_mappers"`)),
	),
	fx.Invoke(fx.Annotate(func(a *API, g *echo.Group) { a.Register(g) }, fx.ParamTags(``, `name:"api_v1"`))),
)

// RelayModule wires the worker into apps/relay as the consumer of
// EventAssignmentRequested, and registers the task table with the relay's
// sweeps: task recovery (ports.TaskTableGroup) and idempotency retention
// (ports.IdempotencyTableGroup). It needs *bun.DB and ports.Clock.
var RelayModule = fx.Module("examples/devices/relay",
	fx.Provide(
		fx.Annotate(newWorker, fx.ParamTags(``, ``, `optional:"true"`)),
		queue.AsConsumer(func(w *Worker) queue.Consumer { return w.Consumer() }),
		fx.Annotate(NewTaskTable, fx.ResultTags(ports.TaskTableGroup)),
		fx.Annotate(NewIdempotencyTable, fx.ResultTags(ports.IdempotencyTableGroup)),
	),
)

func newWorker(db *bun.DB, clock ports.Clock, cfg *configsvc.Service) (*Worker, error) {
	return NewWorker(db, clock, WorkerConfig{Config: reader(cfg)})
}

// newService is NewService reading the upload quotas from cfg (the app's
// config service; absent, the defaults apply).
func newService(db *bun.DB, clock ports.Clock, cfg *configsvc.Service) (*Service, error) {
	s, err := NewService(db, clock)
	if err != nil {
		return nil, err
	}
	s.config = reader(cfg)
	return s, nil
}

// reader keeps a nil *configsvc.Service a nil ConfigReader.
func reader(cfg *configsvc.Service) ConfigReader {
	if cfg == nil {
		return nil
	}
	return cfg
}
