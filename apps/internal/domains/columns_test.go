package domains_test

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/adapters/postgres/pgtasks"
	"github.com/july/template/apps/domain"
	"github.com/july/template/apps/internal/domains"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/ports"
)

// The task and idempotency contract columns have one source,
// pgtasks.ColumnsSQL and pgidem.ColumnsSQL (+ pgidem.UniqueColumns), yet
// each domain's migration spells them out by hand (it owns its table and
// names its constraints). This test holds the copies to the source
// (docs/architecture.md, "Rules stated twice"): it migrates a fresh
// database with every domain's migrations, builds a reference table from
// each ColumnsSQL in a scratch schema, and requires every table a domain
// registers with the relay's sweeps (ports.TaskTable,
// ports.IdempotencyTable) to have each reference column with the same
// type, length, nullability and default, each reference CHECK (whatever
// its name), and, for idempotency, the unique constraint on UniqueColumns.
// A domain may add columns and constraints of its own.
func TestRegisteredTablesMatchColumnsSQL(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var migrations []fs.FS
	for _, set := range domains.MigrationSets() {
		migrations = append(migrations, set.FS)
	}
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.MigrateWith(migrations...)}).Bun

	taskTables, idemTables := registeredTables(t, db)
	// None registered (no domain listed, or none with tables) leaves only
	// the reference tables to build: nothing to compare, nothing wrong.

	for _, q := range []string{
		`CREATE SCHEMA contract_ref`,
		`CREATE TABLE contract_ref.task (id text PRIMARY KEY, ` + pgtasks.ColumnsSQL + `)`,
		`CREATE TABLE contract_ref.idem (id int, ` + pgidem.ColumnsSQL + `)`,
	} {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, "build the reference table from ColumnsSQL: %s", q)
	}
	refTask, refIdem := columnsOf(ctx, t, db, "contract_ref", "task"), columnsOf(ctx, t, db, "contract_ref", "idem")
	delete(refTask, "id")
	delete(refIdem, "id")
	refTaskChecks := checksOf(ctx, t, db, "contract_ref.task")
	require.NotEmpty(t, refTaskChecks, "pgtasks.ColumnsSQL declares its CHECKs")

	for _, tt := range taskTables {
		table := tableOf(t, "task table "+tt.Name, tt.Store)
		t.Run("task/"+table, func(t *testing.T) {
			requireColumns(t, "pgtasks.ColumnsSQL", table, refTask, columnsOf(ctx, t, db, "public", table))
			have := checksOf(ctx, t, db, "public."+table)
			for _, def := range refTaskChecks {
				require.Contains(t, have, def, "%s lacks pgtasks.ColumnsSQL's %s: copy it into the table's migration (any constraint name)", table, def)
			}
		})
	}
	for _, it := range idemTables {
		table := tableOf(t, "idempotency table "+it.Name, it.Records)
		t.Run("idempotency/"+table, func(t *testing.T) {
			requireColumns(t, "pgidem.ColumnsSQL", table, refIdem, columnsOf(ctx, t, db, "public", table))
			require.Contains(t, uniquesOf(ctx, t, db, "public."+table), pgidem.UniqueColumns,
				"%s has no UNIQUE (%s): pgidem.Insert's ON CONFLICT needs it", table, pgidem.UniqueColumns)
		})
	}
}

// registeredTables returns the tables the listed domains register with
// the relay's sweeps, built the way apps/relay builds them.
func registeredTables(t *testing.T, db *bun.DB) ([]ports.TaskTable, []ports.IdempotencyTable) {
	t.Helper()
	relay, err := domain.BuildRelay(domains.All(), domain.RelayDeps{DB: db, Clock: ports.SystemClock, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err, "build the relay sides of domains.All()")
	return relay.TaskTables, relay.IdempotencyTables
}

// tableOf returns the SQL table behind a registered store.
func tableOf(t *testing.T, what string, store any) string {
	t.Helper()
	named, ok := store.(interface{ Table() string })
	require.True(t, ok, "%s: its store %T does not say which table it writes (no Table() string), so its columns cannot be checked", what, store)
	return named.Table()
}

// column is what information_schema says of one column.
type column struct {
	Type, Nullable, Default string
	Length                  int
}

func (c column) String() string {
	typ := c.Type
	if c.Length > 0 {
		typ = fmt.Sprintf("%s(%d)", typ, c.Length)
	}
	null := "NOT NULL"
	if c.Nullable == "YES" {
		null = "NULL"
	}
	if c.Default == "" {
		return typ + " " + null
	}
	return typ + " " + null + " DEFAULT " + c.Default
}

func columnsOf(ctx context.Context, t *testing.T, db bun.IDB, schema, table string) map[string]column {
	t.Helper()
	rows, err := db.QueryContext(ctx, `SELECT column_name, data_type, coalesce(character_maximum_length, 0), is_nullable, coalesce(column_default, '')
		FROM information_schema.columns WHERE table_schema = ? AND table_name = ?`, schema, table)
	require.NoError(t, err)
	defer func() { _ = rows.Close() }()
	out := map[string]column{}
	for rows.Next() {
		var name string
		var c column
		require.NoError(t, rows.Scan(&name, &c.Type, &c.Length, &c.Nullable, &c.Default))
		out[name] = c
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, out, "table %s.%s does not exist", schema, table)
	return out
}

func requireColumns(t *testing.T, source, table string, want, have map[string]column) {
	t.Helper()
	var drift []string
	for name, w := range want {
		h, ok := have[name]
		switch {
		case !ok:
			drift = append(drift, fmt.Sprintf("%s is missing (want %s)", name, w))
		case h != w:
			drift = append(drift, fmt.Sprintf("%s is %s, want %s", name, h, w))
		}
	}
	require.Empty(t, drift, "%s drifted from %s; make its migration declare the columns exactly as %s does:\n%s",
		table, source, source, strings.Join(drift, "\n"))
}

func checksOf(ctx context.Context, t *testing.T, db bun.IDB, table string) []string {
	t.Helper()
	var defs []string
	require.NoError(t, db.NewRaw(`SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = ?::regclass AND contype = 'c' ORDER BY 1`, table).Scan(ctx, &defs))
	return defs
}

// uniquesOf returns each unique constraint's columns, "a, b, c" in order.
func uniquesOf(ctx context.Context, t *testing.T, db bun.IDB, table string) []string {
	t.Helper()
	var cols []string
	require.NoError(t, db.NewRaw(`SELECT string_agg(a.attname, ', ' ORDER BY k.ord)
		FROM pg_constraint c
		CROSS JOIN unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
		JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
		WHERE c.conrelid = ?::regclass AND c.contype = 'u'
		GROUP BY c.oid`, table).Scan(ctx, &cols))
	return cols
}
