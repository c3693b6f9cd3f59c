package release

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// MigrationStatus is one migration and whether the database has it.
type MigrationStatus struct {
	Version string `json:"version"`
	Name    string `json:"name"`
	Set     string `json:"set"`
	Applied bool   `json:"applied"`
}

// Status lists every migration of sets in version order with its state.
// It never writes (bun's migration table is read only if it exists).
func Status(ctx context.Context, db bun.IDB, sets []Set) ([]MigrationStatus, error) {
	migs, err := listMigrations(sets)
	if err != nil {
		return nil, err
	}
	applied, err := appliedVersions(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("migration status: %w", err)
	}
	out := make([]MigrationStatus, 0, len(migs))
	for _, m := range migs {
		out = append(out, MigrationStatus{Version: m.Version, Name: m.Name, Set: m.Set, Applied: applied[m.Version]})
	}
	return out, nil
}
