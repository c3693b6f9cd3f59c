package release

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/july/template/adapters/postgres"
)

// DownResult is what Down did or would have done.
type DownResult struct {
	// RolledBack lists the migrations undone, newest first.
	RolledBack []string `json:"rolled_back"`
	// Blocking lists the tables holding rows that made Down refuse.
	Blocking []string `json:"blocking,omitempty"`
}

// reDownTable finds tables a down file drops or rewrites.
var reDownTable = regexp.MustCompile(`^(?:drop\s+table\s+(?:if\s+exists\s+)?|alter\s+table\s+(?:if\s+exists\s+)?(?:only\s+)?|truncate\s+(?:table\s+)?|delete\s+from\s+|update\s+)([\w.]+)`)

// Down rolls back, newest first, every applied migration with a version
// above to ("0" rolls back all), under the advisory lock. Before touching
// anything it checks every table the down files would drop or rewrite, and
// every table those migrations created; if any holds a row it changes
// nothing and returns ErrRefused with the blocking tables. Down never
// deletes data.
func Down(ctx context.Context, db *bun.DB, sets []Set, to string, lockTimeout time.Duration) (*DownResult, error) {
	res := &DownResult{RolledBack: []string{}}
	migs, err := listMigrations(sets)
	if err != nil {
		return res, err
	}
	known := to == "0"
	for _, m := range migs {
		known = known || m.Version == to
	}
	if !known {
		return res, fmt.Errorf("%w: %q", ErrUnknownVersion, to)
	}
	_, err = withLock(ctx, db, lockTimeout, func() error { return down(ctx, db, sets, migs, to, res) })
	return res, err
}

func down(ctx context.Context, db *bun.DB, sets []Set, migs []migration, to string, res *DownResult) error {
	applied, err := appliedVersions(ctx, db)
	if err != nil {
		return err
	}
	man, err := BuildManifest(ctx, db, sets)
	if err != nil {
		return err
	}
	var targets []migration
	for i := len(migs) - 1; i >= 0; i-- {
		if m := migs[i]; applied[m.Version] && m.Version > to {
			targets = append(targets, m)
		}
	}
	tables := map[string]bool{}
	for _, m := range targets {
		if m.Down == "" {
			return fmt.Errorf("migration %s_%s has no down file: it cannot be rolled back, fix forward", m.Version, m.Name)
		}
		sql, err := readSQL(m, m.Down)
		if err != nil {
			return err
		}
		for _, st := range statements(sql) {
			if mm := reDownTable.FindStringSubmatch(st); mm != nil {
				tables[strings.TrimPrefix(mm[1], "public.")] = true
			}
		}
		for _, obj := range man.Created(m.Version) {
			if t, ok := strings.CutPrefix(obj, KindTable+":"); ok && t != "" {
				tables[t] = true
			}
		}
	}
	for t := range tables {
		ok, err := tableExists(ctx, db, t)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		var has bool
		if err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %q)`, t)).Scan(&has); err != nil {
			return fmt.Errorf("look for rows in %s: %w", t, err)
		}
		if has {
			res.Blocking = append(res.Blocking, t)
		}
	}
	if len(res.Blocking) > 0 {
		sort.Strings(res.Blocking)
		return ErrRefused
	}
	ms, err := newMigrations(sets)
	if err != nil {
		return err
	}
	m := postgres.NewMigrator(db, ms)
	withStatus, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return fmt.Errorf("read migration status: %w", err)
	}
	byName := map[string]*migrate.Migration{}
	for i := range withStatus {
		byName[withStatus[i].Name] = &withStatus[i]
	}
	for _, t := range targets {
		mg := byName[t.Version]
		if mg == nil || mg.Down == nil {
			return fmt.Errorf("migration %s has no down step", t.Version)
		}
		if err := mg.Down(ctx, m, mg); err != nil {
			return fmt.Errorf("%w: %s down: %w", ErrApplyFailed, t.Version, err)
		}
		if err := m.MarkUnapplied(ctx, mg); err != nil {
			return fmt.Errorf("record rollback of %s: %w", t.Version, err)
		}
		res.RolledBack = append(res.RolledBack, t.Version)
	}
	return nil
}
