// Package domains is the service's one list of config keys: the
// template's own and every business domain's. apps/api validates updates
// against this registry, apps/relay reads through it, and apps/migrate
// seeds its defaults (`migrate backfill seed-system-config`), so a key a
// domain adds here is served, seeded and audited everywhere at once.
package domains

import (
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/sysconfig"
	"github.com/july/template/examples"
)

// ConfigSpecs returns every domain's keys. A new domain appends its
// ConfigSpecs() here, next to the examples' line.
func ConfigSpecs() []sysconfig.Spec {
	var specs []sysconfig.Spec
	specs = append(specs, examples.ConfigSpecs()...) // examples: delete this line (and examples/) in a new service
	return specs
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
