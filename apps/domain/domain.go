// Package domain is the seam between the binaries and a business domain:
// everything a domain plugs into apps/api, apps/relay and apps/migrate,
// as one plain value. A domain package exports a Domain; the service's
// one list of them is apps/internal/domains.All, which the three apps
// range over. Nothing here knows fx: the apps turn these values into
// their graphs, so a domain never names an fx tag.
package domain

import (
	"fmt"
	"log/slog"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/periodic"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

// Domain is one business domain's contribution to the service. Every
// field but Name may be left empty: a domain without HTTP routes has no
// API, one without consumers or sweeps no Relay.
type Domain struct {
	// Name identifies the domain in errors, e.g. "examples/topup".
	Name string
	// Migrations is the domain's release set; apps/migrate applies the
	// sets in list order after the foundation's. Versions must be unique
	// across every set, and each domain owns its tables.
	Migrations release.Set
	// ConfigSpecs are the domain's system-config keys: the API serves and
	// audits them, the relay reads them, migrate seeds their defaults.
	ConfigSpecs []sysconfig.Spec
	// API builds the domain's HTTP side in apps/api; nil for none.
	API func(APIDeps) (API, error)
	// Relay builds the domain's consumers and sweep tables in apps/relay;
	// nil for none.
	Relay func(RelayDeps) (Relay, error)
	// Commands are the domain's periodic commands (core/periodic): every
	// relay commits each occurrence once, as an outbox event with a
	// stable id, which the domain's consumer (in Relay) handles. None: no
	// runner starts (docs/domains.md, "Periodic commands").
	Commands []periodic.Command
	// APIEnv and RelayEnv are the domain's own environment variables in
	// apps/api and apps/relay (e.g. the base URL of a partner's API its
	// consumer calls), validated at start-up and listed by -h; declare
	// one Env in both when both sides read it.
	APIEnv, RelayEnv Env
}

// Commands returns every domain's periodic commands, in list order.
func Commands(ds []Domain) []periodic.Command {
	var cs []periodic.Command
	for _, d := range ds {
		cs = append(cs, d.Commands...)
	}
	return cs
}

// APIDeps are what apps/api gives every domain.
type APIDeps struct {
	DB    *bun.DB
	Clock ports.Clock
	// Config reads the registered system-config keys (nil in tests that
	// run without it; a domain then applies its defaults or refuses).
	Config *configsvc.Service
	Guard  ports.Guard
	// Counter is the shared per-window counter (Redis) for per-caller
	// rates (adapters/http/ratehttp); nil in tests that run without it.
	Counter ports.WindowCounter
	Logger  *slog.Logger
	// Env is what the domain's APIEnv.Load returned (nil when it declares
	// none); BuildAPI sets it from Settings.
	Env any
	// Settings are every domain's loaded API environment (LoadEnv).
	Settings Settings
}

// API is a domain's HTTP side.
type API struct {
	// Register adds the handlers to the authenticated /api/v1 group (the
	// bearer token is checked before a handler runs).
	Register func(g *echo.Group)
	// AccessRoutes are the access-log policies of the routes Register adds
	// (full paths, e.g. "/api/v1/orders").
	AccessRoutes []accesslog.Route
	// ErrorMapper renders the domain's errors in the error envelope; nil
	// when the domain has none of its own.
	ErrorMapper httpx.ErrorMapper
}

// RelayDeps are what apps/relay gives every domain.
type RelayDeps struct {
	DB    *bun.DB
	Clock ports.Clock
	// Config reads the registered system-config keys (see APIDeps.Config).
	Config *configsvc.Service
	Logger *slog.Logger
	// Env is what the domain's RelayEnv.Load returned (nil when it
	// declares none); BuildRelay sets it from Settings.
	Env any
	// Settings are every domain's loaded relay environment (LoadEnv).
	Settings Settings
}

// Relay is a domain's side of apps/relay.
type Relay struct {
	// Consumers handle the domain's events in the relay's asynq worker.
	Consumers []queue.Consumer
	// TaskTables are the domain's five-state task tables, for the relay's
	// task-recovery sweep.
	TaskTables []ports.TaskTable
	// IdempotencyTables are the tables holding the domain's idempotency
	// records, for the relay's idempotency retention.
	IdempotencyTables []ports.IdempotencyTable
}

// BuildAPI builds the HTTP side of every domain in ds that has one, in
// list order.
func BuildAPI(ds []Domain, deps APIDeps) ([]API, error) {
	var apis []API
	for _, d := range ds {
		if d.API == nil {
			continue
		}
		deps.Env = deps.Settings[d.Name]
		a, err := d.API(deps)
		if err != nil {
			return nil, fmt.Errorf("domain %s: api: %w", d.Name, err)
		}
		apis = append(apis, a)
	}
	return apis, nil
}

// BuildRelay builds the relay side of every domain in ds that has one and
// joins them, in list order.
func BuildRelay(ds []Domain, deps RelayDeps) (Relay, error) {
	var all Relay
	for _, d := range ds {
		if d.Relay == nil {
			continue
		}
		deps.Env = deps.Settings[d.Name]
		r, err := d.Relay(deps)
		if err != nil {
			return Relay{}, fmt.Errorf("domain %s: relay: %w", d.Name, err)
		}
		all.Consumers = append(all.Consumers, r.Consumers...)
		all.TaskTables = append(all.TaskTables, r.TaskTables...)
		all.IdempotencyTables = append(all.IdempotencyTables, r.IdempotencyTables...)
	}
	return all, nil
}
