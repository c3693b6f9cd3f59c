package pgidem

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/ports"
)

// SavedAtColumnSQL is the column a business table adds so its records can
// expire (Expirer): when the record was saved. Insert does not name it, so
// the DEFAULT stamps every new row at its insert (transaction) time; on an
// existing table, ADD COLUMN with this stable default is a catalog-only
// change that stamps the rows already there with the migration's time, so
// their records expire one window after the release. Add the partial
// index ExpiringIndexSQL with it.
//
//	ALTER TABLE orders ADD COLUMN idem_saved_at timestamptz DEFAULT now();
const SavedAtColumnSQL = `idem_saved_at timestamptz DEFAULT now()`

// ExpiringIndexSQL returns the partial index Expirer scans on table (name
// <table>_idem_saved_ix), for the table's migration; on an existing table
// build it CONCURRENTLY in a migration file without .tx.
func ExpiringIndexSQL(table string) string {
	return fmt.Sprintf(`CREATE INDEX %q ON %q (idem_saved_at) WHERE idem_request_id IS NOT NULL`, table+"_idem_saved_ix", table)
}

// expireSQL locks the oldest records in a materialized CTE, so LIMIT bounds
// the rows changed and concurrent sweeps skip each other's rows, then
// clears every idem_* column on them. ctid identifies the locked rows
// whatever the table's primary key is.
const expireSQL = `WITH expired AS MATERIALIZED (
	SELECT ctid AS row_ctid FROM ? WHERE idem_request_id IS NOT NULL AND idem_saved_at <= ?
	ORDER BY idem_saved_at LIMIT ? FOR UPDATE SKIP LOCKED
)
UPDATE ? AS t SET idem_principal = NULL, idem_operation = NULL, idem_request_id = NULL,
	idem_fingerprint = NULL, idem_result_ref = NULL, idem_response_status = NULL,
	idem_response_body = NULL, idem_response_content_type = NULL, idem_saved_at = NULL
FROM expired WHERE t.ctid = expired.row_ctid`

// Expirer is ports.IdempotencyExpirer on one business table carrying
// Record and SavedAtColumnSQL: ExpireRecords clears the idem_* columns and
// leaves the business columns alone. Safe for concurrent use.
type Expirer struct {
	db    bun.IDB
	table bun.Ident
}

var _ ports.IdempotencyExpirer = (*Expirer)(nil)

// expirerTable is what NewExpirer accepts: a plain lowercase identifier
// short enough for "<table>_idem_saved_ix".
var expirerTable = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,49}$`)

// NewExpirer returns an Expirer on table through db. The table name must
// match ^[a-z_][a-z0-9_]{0,49}$; it is always quoted.
func NewExpirer(db bun.IDB, table string) (*Expirer, error) {
	if db == nil {
		return nil, errors.New("pgidem: NewExpirer needs a db; pass the *bun.DB from postgres.Open")
	}
	if !expirerTable.MatchString(table) {
		return nil, fmt.Errorf("pgidem: table %q must match %s", table, expirerTable)
	}
	return &Expirer{db: db, table: bun.Ident(table)}, nil
}

// Table returns the name of the business table whose records the
// Expirer clears, so a test can compare that table with ColumnsSQL.
func (e *Expirer) Table() string { return string(e.table) }

// ExpireRecords implements ports.IdempotencyExpirer.
func (e *Expirer) ExpireRecords(ctx context.Context, savedBefore time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, fmt.Errorf("expire idempotency records: limit %d; pass 1 or more", limit)
	}
	res, err := e.db.ExecContext(ctx, expireSQL, e.table, savedBefore, limit, e.table)
	if err != nil {
		return 0, fmt.Errorf("expire idempotency records in %s: %w", e.table, pgerr.Translate(err))
	}
	return pgerr.Affected(res)
}
