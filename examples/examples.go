// Package examples wires the reference domains; a new service deletes the
// three lines that use it (apps/api, apps/relay, apps/migrate) and this
// directory.
package examples

import (
	"io/fs"

	"go.uber.org/fx"

	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/core/sysconfig"
	"github.com/july/template/examples/devices"
	"github.com/july/template/examples/topup"
)

// APIModule adds every example domain's routes to apps/api.
var APIModule = fx.Options(topup.APIModule, devices.APIModule)

// RelayModule adds every example domain's consumers to apps/relay.
var RelayModule = fx.Options(topup.RelayModule, devices.RelayModule)

// ConfigSpecs returns every example domain's config keys, for the
// service's one registry (apps/internal/domains).
func ConfigSpecs() []sysconfig.Spec {
	return append(topup.ConfigSpecs(), devices.ConfigSpecs()...)
}

// MigrationSets returns the example domains' release sets, in the order
// apps/migrate applies them after the foundation set.
func MigrationSets() []release.Set {
	return []release.Set{topup.Migrations(), devices.Migrations()}
}

// MigrationsFS returns the example domains' migration directories, for
// tests: postgres.MigrateWith(examples.MigrationsFS()...).
func MigrationsFS() []fs.FS {
	return []fs.FS{topup.MigrationsFS, devices.MigrationsFS}
}
