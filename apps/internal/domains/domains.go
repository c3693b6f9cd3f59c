// Package domains is how the three apps see the service's domains: the
// service's list (the top-level domains package, which the service owns)
// plus what the foundation's own tests include (the test-only domain
// apps/internal/testdomain). apps/api serves their routes, apps/relay
// runs their consumers and sweeps their tables, apps/migrate applies
// their migration sets, and all three share one config registry of the
// template's keys and theirs.
package domains

import (
	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/apps/domain"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/sysconfig"
	service "github.com/july/template/domains"
)

// included are the domains Include added: the foundation's test-only
// domain in its tests and in binaries built with -tags testdomain.
var included []domain.Domain

// Include adds d after the service's domains. Only init functions call it
// (the foundation's _test.go files and testdomain.go), so the list is
// fixed before anything reads it.
func Include(d domain.Domain) { included = append(included, d) }

// All is every domain the apps run: the service's list
// (domains.All, in the order migrate applies their sets), then the
// included ones.
func All() []domain.Domain {
	return append(service.All(), included...)
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
