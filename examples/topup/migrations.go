package topup

import (
	"embed"
	"io/fs"

	"github.com/july/template/adapters/postgres/release"
)

//go:embed migrations/*.sql migrations/schema.json
var migrationFiles embed.FS

// MigrationsFS holds this domain's bun migrations
// (<version>_<name>.tx.up.sql / .tx.down.sql) at its root. Tests apply it
// with postgres.MigrateWith(topup.MigrationsFS).
var MigrationsFS fs.FS = mustSub(migrationFiles, "migrations")

// Migrations returns the domain's migration set for apps/migrate.
func Migrations() release.Set {
	return release.Set{Name: "examples/topup", FS: MigrationsFS}
}

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err) // dir is a constant embedded above
	}
	return sub
}
