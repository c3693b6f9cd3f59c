// Package migrations holds the foundation's embedded SQL migrations and the
// expected-schema snapshot that `migrate check` compares the catalog with.
//
// Files are named <version>_<verb_noun>.tx.up.sql / .tx.down.sql; the .tx.
// infix makes bun run each file in one transaction, so a failed migration
// rolls back whole and is never recorded as applied.
package migrations

import "embed"

// FS holds the foundation migrations and schema.json.
//
//go:embed *.sql schema.json
var FS embed.FS
