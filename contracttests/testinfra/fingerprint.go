package testinfra

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/uptrace/bun"
)

// Fingerprint summarises the current schema's structure (tables, columns,
// constraints, indexes, triggers, with validity flags) and every table's
// rows. Two equal fingerprints around a command prove it wrote nothing.
func Fingerprint(t testing.TB, db bun.IDB) string {
	t.Helper()
	ctx := context.Background()
	var schema string
	if err := db.QueryRowContext(ctx, `SELECT coalesce(md5(string_agg(x, E'\n' ORDER BY x)), '') FROM (
		SELECT 'rel:' || relname || ':' || relkind::text FROM pg_class WHERE relnamespace = current_schema()::regnamespace
		UNION ALL SELECT 'con:' || conname || ':' || pg_get_constraintdef(oid) || convalidated FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
		UNION ALL SELECT 'idx:' || pg_get_indexdef(indexrelid) || indisvalid FROM pg_index WHERE indrelid IN (SELECT oid FROM pg_class WHERE relnamespace = current_schema()::regnamespace)
		UNION ALL SELECT 'trg:' || tgname || tgenabled::text FROM pg_trigger WHERE NOT tgisinternal
		UNION ALL SELECT 'col:' || c.relname || '.' || a.attname || format_type(a.atttypid, a.atttypmod) || a.attnotnull
			FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
			WHERE c.relnamespace = current_schema()::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
	) s(x)`).Scan(&schema); err != nil {
		t.Fatalf("fingerprint schema: %v", err)
	}
	var tables []string
	if err := db.NewRaw(`SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`).Scan(ctx, &tables); err != nil {
		t.Fatalf("list tables: %v", err)
	}
	parts := []string{schema}
	for _, tb := range tables {
		var h string
		if err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT coalesce(md5(string_agg(t::text, ',' ORDER BY t::text)), '') FROM %q t`, tb)).Scan(&h); err != nil {
			t.Fatalf("fingerprint rows of %s: %v", tb, err)
		}
		parts = append(parts, tb+"="+h)
	}
	return strings.Join(parts, ";")
}
