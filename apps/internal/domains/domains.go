// Package domains is the service's one list of business domains, All.
// apps/api serves their routes, apps/relay runs their consumers and
// sweeps their tables, apps/migrate applies their migration sets, and all
// three share one config registry of the template's keys and theirs. To
// add a domain, add its line to All; to remove one, delete its line.
package domains

import (
	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/apps/domain"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/sysconfig"
	"github.com/july/template/examples/devices"
	"github.com/july/template/examples/topup"
)

// All is every domain of the service, one line each, in the order
// migrate applies their sets.
func All() []domain.Domain {
	return []domain.Domain{
		// Your domains, one line each, e.g. orders.Domain(),
		topup.Domain(),   // examples: delete this line (and examples/) in a new service
		devices.Domain(), // examples: delete this line (and examples/) in a new service
	}
}

// ConfigSpecs returns every domain's keys.
func ConfigSpecs() []sysconfig.Spec {
	var specs []sysconfig.Spec
	for _, d := range All() {
		specs = append(specs, d.ConfigSpecs...)
	}
	return specs
}

// MigrationSets returns the release set of every domain that has tables,
// in list order.
func MigrationSets() []release.Set {
	var sets []release.Set
	for _, d := range All() {
		if d.Migrations.FS != nil {
			sets = append(sets, d.Migrations)
		}
	}
	return sets
}

// Registry returns the service's registry: the template's keys, then every
// domain's. A duplicate key, a type clash or an invalid default is an error
// at start-up (and in the tests), never at the first read.
func Registry() (*sysconfig.Registry, error) {
	reg := sysconfig.NewRegistry()
	if err := configsvc.RegisterTemplateKeys(reg); err != nil {
		return nil, err
	}
	if err := reg.Register(ConfigSpecs()...); err != nil {
		return nil, err
	}
	return reg, nil
}
