package topup

import (
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/apps/domain"
	"github.com/july/template/core/periodic"
	"github.com/july/template/core/ports"
)

// Domain is everything top-up plugs into the service: its routes, access-log
// policies and error mapper in apps/api (the use cases, *Service, over
// the app's database, clock, config and guard), the topup.created consumer,
// ex_topup_order's idempotency records and the daily reconciliation (a
// periodic command and its consumer) in apps/relay, its migration set
// and its config keys.
func Domain() domain.Domain {
	return domain.Domain{
		Name:        "examples/topup",
		Migrations:  Migrations(),
		ConfigSpecs: ConfigSpecs(),
		API:         newAPIPart,
		Relay:       newRelayPart,
		Commands:    []periodic.Command{ReconcileCommandDecl()},
	}
}

func newAPIPart(d domain.APIDeps) (domain.API, error) {
	links, err := NewRandomPayLinks()
	if err != nil {
		return domain.API{}, err
	}
	var cfg ConfigReader // a nil *configsvc.Service stays a nil ConfigReader
	if d.Config != nil {
		cfg = d.Config
	}
	svc, err := NewService(ServiceConfig{DB: d.DB, PayLinks: links, Clock: d.Clock, Config: cfg})
	if err != nil {
		return domain.API{}, err
	}
	api, err := NewAPI(APIConfig{Service: svc, Guard: d.Guard, Logger: d.Logger, Counter: d.Counter})
	if err != nil {
		return domain.API{}, err
	}
	return domain.API{Register: api.Register, AccessRoutes: AccessRoutes(), ErrorMapper: MapError}, nil
}

func newRelayPart(d domain.RelayDeps) (domain.Relay, error) {
	c, err := NewCrediter(d.DB, d.Clock, d.Logger)
	if err != nil {
		return domain.Relay{}, err
	}
	idem, err := NewIdempotencyTable(d.DB)
	if err != nil {
		return domain.Relay{}, err
	}
	rec, err := NewReconciler(d.DB, d.Clock, d.Logger)
	if err != nil {
		return domain.Relay{}, err
	}
	return domain.Relay{Consumers: []queue.Consumer{c.Consumer(), rec.Consumer()}, IdempotencyTables: []ports.IdempotencyTable{idem}}, nil
}

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
