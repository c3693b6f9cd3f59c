// Package testdomain is the foundation's test-only domain: one idempotent
// create, one event and a consumer that records its effect, so the
// foundation's tests hold whatever domains a service has. Tests include it
// with domains.Include(testdomain.Domain()), binaries with -tags
// testdomain; a service never serves it. Its shape is every domain's:
// handlers do no SQL, each use case owns its transaction (config read
// before it, role checked first), the consumer records its consumption in
// its effect's transaction.
package testdomain

import (
	"embed"
	"io/fs"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/apps/domain"
	"github.com/july/template/core/ports"
)

// Names others code against (apps' tests, the relay's end-to-end tests).
const (
	// RouteOrders is the create route; RouteOrders+"/:id" reads one order.
	RouteOrders = "/api/v1/td/orders"
	// EventCreated is appended with every new order.
	EventCreated = "td.order.created"
	// ConsumerName names the consumer of EventCreated in its consumption
	// records.
	ConsumerName = "td-apply"
	// RoleWriter may create orders.
	RoleWriter = "td_writer"
	// OperationCreate is the idempotency scope's operation of the create.
	OperationCreate = "td.order.create"
	// SweepName labels td_order in the idempotency retention.
	SweepName = "td.order"
)

// Domain is the test-only domain for apps/internal/domains.
func Domain() domain.Domain {
	return domain.Domain{
		Name:        "apps/internal/testdomain",
		Migrations:  Migrations(),
		ConfigSpecs: ConfigSpecs(),
		API:         newAPIPart,
		Relay:       newRelayPart,
	}
}

func newAPIPart(d domain.APIDeps) (domain.API, error) {
	svc, err := NewService(d.DB, d.Clock, d.Config)
	if err != nil {
		return domain.API{}, err
	}
	api, err := NewAPI(svc, d.Guard, d.Logger)
	if err != nil {
		return domain.API{}, err
	}
	return domain.API{Register: api.Register, ErrorMapper: MapError}, nil
}

func newRelayPart(d domain.RelayDeps) (domain.Relay, error) {
	a, err := NewApplier(d.DB, d.Clock)
	if err != nil {
		return domain.Relay{}, err
	}
	records, err := pgidem.NewExpirer(d.DB, tableOrder)
	if err != nil {
		return domain.Relay{}, err
	}
	return domain.Relay{
		Consumers:         []queue.Consumer{a.Consumer()},
		IdempotencyTables: []ports.IdempotencyTable{{Name: SweepName, Records: records}},
	}, nil
}

//go:embed migrations/*.sql migrations/schema.json
var migrationFiles embed.FS

// MigrationsFS holds the domain's migrations at its root.
var MigrationsFS, _ = fs.Sub(migrationFiles, "migrations") // a constant directory embedded above

// Migrations returns the domain's migration set.
func Migrations() release.Set { return release.Set{Name: "apps/internal/testdomain", FS: MigrationsFS} }
