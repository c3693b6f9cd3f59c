package release

import (
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// Set is one owner's migrations with the rules that guard them.
type Set struct {
	// Name identifies the owner in reports ("foundation", "examples/topup").
	Name string
	// FS holds <version>_<name>.tx.up.sql and .tx.down.sql files at its root
	// and, optionally, SnapshotFile (written by `migrate snapshot`).
	FS fs.FS
	// Rules are data checks: invariants on existing tables and
	// preconditions of pending migrations.
	Rules []Rule
	// Smoke, when set, exercises the set's tables inside a transaction that
	// Verify always rolls back.
	Smoke func(ctx context.Context, tx bun.Tx) error
	// TaskTables are the set's five-state task tables (pgtasks columns:
	// status, lease_expires_at); Check warns about unfinished tasks in them
	// (violations in strict mode).
	TaskTables []string
}

// Rule counts offending rows; a non-zero count is a finding.
type Rule struct {
	// Name is the finding's safe identifier, e.g. "outbox_status_out_of_range".
	Name string
	// Table is read by SQL; the rule is skipped while it does not exist.
	Table string
	// Before, when set, makes the rule a precondition of that pending
	// migration version (e.g. no duplicates before a unique constraint).
	// When empty the rule is an invariant checked by Check and Verify.
	Before string
	// Warn reports a non-zero count as a warning instead of a violation.
	Warn bool
	// Strict, with Warn, makes the finding a violation when Check runs in
	// strict mode (CheckOptions.Strict): work in flight (undelivered
	// outbox rows, unfinished tasks) that a release with producers stopped
	// and queues drained must not leave behind.
	Strict bool
	// SQL is a SELECT returning one count of offending rows. It must not
	// rely on the constraints it guards (they may be missing or NOT VALID).
	SQL string
	// Message explains the finding and what to do.
	Message string
}

// migration is one version found in a Set's FS.
type migration struct {
	Version string
	Name    string
	Set     string
	Up      string // file name
	Down    string // file name, empty when missing
	fsys    fs.FS
}

var fileRE = regexp.MustCompile(`^(\d{1,14})_([0-9a-z_\-]+?)(\.tx)?\.(up|down)\.sql$`)

// listMigrations returns every migration of sets in version order.
func listMigrations(sets []Set) ([]migration, error) {
	byVersion := map[string]*migration{}
	for _, s := range sets {
		entries, err := fs.ReadDir(s.FS, ".")
		if err != nil {
			return nil, fmt.Errorf("read migration set %s: %w", s.Name, err)
		}
		for _, e := range entries {
			m := fileRE.FindStringSubmatch(e.Name())
			if m == nil {
				continue
			}
			mg := byVersion[m[1]]
			if mg == nil {
				mg = &migration{Version: m[1], Name: m[2], Set: s.Name, fsys: s.FS}
				byVersion[m[1]] = mg
			}
			if mg.Set != s.Name {
				return nil, fmt.Errorf("migration version %s is defined by sets %s and %s: give one of them a new version", m[1], mg.Set, s.Name)
			}
			if m[4] == "up" {
				mg.Up = e.Name()
			} else {
				mg.Down = e.Name()
			}
		}
	}
	out := make([]migration, 0, len(byVersion))
	for _, mg := range byVersion {
		if mg.Up == "" {
			return nil, fmt.Errorf("migration %s_%s in set %s has no up file", mg.Version, mg.Name, mg.Set)
		}
		out = append(out, *mg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// newMigrations feeds every set to bun's migrate package.
func newMigrations(sets []Set) (*migrate.Migrations, error) {
	ms := migrate.NewMigrations()
	for _, s := range sets {
		if err := ms.Discover(s.FS); err != nil {
			return nil, fmt.Errorf("discover migration set %s: %w", s.Name, err)
		}
	}
	return ms, nil
}

func readSQL(m migration, file string) (string, error) {
	b, err := fs.ReadFile(m.fsys, file)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", file, err)
	}
	return strings.ToLower(string(b)), nil
}
