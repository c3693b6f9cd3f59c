// Package examples holds the reference domains, examples/topup and
// examples/devices. Each exports a Domain() (apps/domain.Domain) that
// domains/domains.go lists; a new service deletes those two lines and
// this directory (make remove-examples). The foundation's tests never
// import it: they run on apps/internal/testdomain.
package examples

import (
	"io/fs"

	"github.com/july/template/examples/devices"
	"github.com/july/template/examples/topup"
)

// MigrationsFS returns the example domains' migration directories, for
// what drives the examples outside the apps (bench/cmd/uploadbench):
// postgres.MigrateWith(examples.MigrationsFS()...).
func MigrationsFS() []fs.FS {
	return []fs.FS{topup.MigrationsFS, devices.MigrationsFS}
}
