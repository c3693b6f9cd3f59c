package devices

import (
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/apps/domain"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/periodic"
	"github.com/july/template/core/ports"
)

// Domain is everything devices plugs into the service: the upload and
// task routes, the upload's access-log policy and MapError in apps/api;
// the worker as the consumer of EventAssignmentRequested and the task
// table for the relay's task recovery and idempotency retention in
// apps/relay; its migration set and its config keys.
func Domain() domain.Domain {
	return domain.Domain{
		Name:        "examples/devices",
		Migrations:  Migrations(),
		ConfigSpecs: ConfigSpecs(),
		API:         newAPIPart,
		Relay:       func(d domain.RelayDeps) (domain.Relay, error) { return newRelayPart(d, nil) },
		Commands:    []periodic.Command{FileSweepCommandDecl()},
	}
}

func newAPIPart(d domain.APIDeps) (domain.API, error) {
	svc, err := newService(d.DB, d.Clock, d.Config)
	if err != nil {
		return domain.API{}, err
	}
	api, err := NewAPI(svc, d.Guard, d.Counter, d.Logger)
	if err != nil {
		return domain.API{}, err
	}
	return domain.API{Register: api.Register, AccessRoutes: AccessRoutes(), ErrorMapper: MapError}, nil
}

// newRelayPart builds the worker (with afterChunk installed, for tests)
// and the task table's sweep registrations.
func newRelayPart(d domain.RelayDeps, afterChunk func(done int64) error) (domain.Relay, error) {
	w, err := NewWorker(d.DB, d.Clock, WorkerConfig{Config: reader(d.Config)})
	if err != nil {
		return domain.Relay{}, err
	}
	w.afterChunk = afterChunk
	tasks, err := NewTaskTable(d.DB, d.Clock)
	if err != nil {
		return domain.Relay{}, err
	}
	idem, err := NewIdempotencyTable(d.DB)
	if err != nil {
		return domain.Relay{}, err
	}
	files := &fileSweeper{db: d.DB, clock: d.Clock, config: reader(d.Config)}
	return domain.Relay{
		Consumers:         []queue.Consumer{w.Consumer(), files.consumer()},
		TaskTables:        []ports.TaskTable{tasks},
		IdempotencyTables: []ports.IdempotencyTable{idem},
	}, nil
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
