package postgres

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/july/template/adapters/postgres/migrations"
)

// NewMigrations returns the foundation migrations followed by the extra
// sets (one fs.FS of <version>_<name>.tx.up.sql / .tx.down.sql files per
// owner, e.g. an examples/ domain). Versions must be unique across sets.
func NewMigrations(extra ...fs.FS) (*migrate.Migrations, error) {
	ms := migrate.NewMigrations()
	for i, fsys := range append([]fs.FS{migrations.FS}, extra...) {
		if err := ms.Discover(fsys); err != nil {
			return nil, fmt.Errorf("discover migration set %d: %w", i, err)
		}
	}
	return ms, nil
}

// NewMigrator returns a bun migrator over ms that records a migration as
// applied only after it succeeded.
func NewMigrator(db *bun.DB, ms *migrate.Migrations) *migrate.Migrator {
	return migrate.NewMigrator(db, ms, migrate.WithMarkAppliedOnSuccess(true))
}

// Migrate applies every pending foundation migration without pre- or
// post-flight checks. Tests use it (testinfra.DBOpts.Migrate); in production
// run `migrate up`, which adds the lock and the checks.
func Migrate(ctx context.Context, db *bun.DB) error {
	return MigrateWith()(ctx, db)
}

// MigrateWith returns a Migrate that also applies the given domain migration
// sets (e.g. an example domain's embedded SQL), for tests of those domains:
//
//	testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.MigrateWith(topup.MigrationsFS)})
func MigrateWith(extra ...fs.FS) func(ctx context.Context, db *bun.DB) error {
	return func(ctx context.Context, db *bun.DB) error { return migrateAll(ctx, db, extra...) }
}

func migrateAll(ctx context.Context, db *bun.DB, extra ...fs.FS) error {
	ms, err := NewMigrations(extra...)
	if err != nil {
		return err
	}
	m := NewMigrator(db, ms)
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("init migration tables: %w", err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}
