package devices

import (
	"embed"
	"io/fs"

	"github.com/july/template/adapters/postgres/release"
)

//go:embed migrations/*.sql migrations/schema.json
var migrationFiles embed.FS

// MigrationsFS holds this domain's bun migrations (versions
// 20261201200001..7) at its root: the task table, the failure details,
// the assignment facts, the idempotency records' saved-at column and
// its index (for the relay's idempotency retention), the task's assign_any
// (whether its uploader held RoleAdmin) and the index the upload rate
// quota counts by. Tests apply it with postgres.MigrateWith.
var MigrationsFS fs.FS = mustSub(migrationFiles, "migrations")

// Migrations returns the release set apps/migrate applies after the
// foundation set. Every object it creates is prefixed ex_devices_, so the
// ownership manifest never sees two owners.
func Migrations() release.Set {
	return release.Set{Name: "examples/devices", FS: MigrationsFS, TaskTables: []string{"ex_devices_task"}}
}

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // a literal directory of an embed: cannot fail at run time
	}
	return sub
}
