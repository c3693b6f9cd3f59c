// Package examples holds the reference domains, examples/topup and
// examples/devices. Each exports a Domain() (apps/domain.Domain) that
// apps/internal/domains.All lists; a new service deletes those two lines
// and this directory (make remove-examples).
package examples

import (
	"io/fs"

	"github.com/july/template/adapters/postgres/release"

	"github.com/july/template/examples/devices"
	"github.com/july/template/examples/topup"
)

// MigrationSets returns the example domains' release sets in the order
// apps/migrate applies them, for the release tests of adapters/postgres
// (which cannot import apps/internal/domains).
func MigrationSets() []release.Set {
	return []release.Set{topup.Migrations(), devices.Migrations()}
}

// MigrationsFS returns the example domains' migration directories, for
// tests: postgres.MigrateWith(examples.MigrationsFS()...).
func MigrationsFS() []fs.FS {
	return []fs.FS{topup.MigrationsFS, devices.MigrationsFS}
}
