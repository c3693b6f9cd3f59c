package pgidem_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/contracttests"
	"github.com/july/template/core/idempotency"
)

func TestExpirer(t *testing.T) {
	t.Parallel()

	contracttests.RunIdempotencyExpirerSuite(t, func(t *testing.T) contracttests.IdempotencyExpiryHarness {
		db := newOrdersDB(t)
		_, err := db.ExecContext(t.Context(), pgidem.ExpiringIndexSQL("orders"))
		require.NoError(t, err)
		exp, err := pgidem.NewExpirer(db, "orders")
		require.NoError(t, err)
		return contracttests.IdempotencyExpiryHarness{
			Expirer: exp,
			SaveFunc: func(t *testing.T, key string, savedAt time.Time) {
				t.Helper()
				k := idemKey(t, "user-1", key, `{"amount_cents":100}`)
				d, _, err := createOrder(t.Context(), db, k, 100)
				require.NoError(t, err, "create with key %s", key)
				require.Equal(t, idempotency.DecisionNew, d, "key %s is still taken", key)
				_, err = db.NewUpdate().Table("orders").Set("idem_saved_at = ?", savedAt).
					Where("idem_request_id = ?", key).Exec(t.Context())
				require.NoError(t, err)
			},
			PlainRowFunc: func(t *testing.T) {
				t.Helper()
				_, err := db.NewInsert().Model(&idemOrder{AmountCents: 7}).Exec(t.Context())
				require.NoError(t, err)
			},
			HasRecordFunc: func(t *testing.T, key string) bool {
				t.Helper()
				n, err := db.NewSelect().Table("orders").
					Where("idem_request_id = ? AND idem_response_body IS NOT NULL", key).Count(t.Context())
				require.NoError(t, err)
				return n > 0
			},
			RowsFunc: func(t *testing.T) int {
				t.Helper()
				n, err := db.NewSelect().Table("orders").Count(t.Context())
				require.NoError(t, err)
				return int(n)
			},
		}
	})
}

// A fresh record is stamped by the column's default, and a table without
// the column is refused at the first sweep, not silently skipped.
func TestExpirerSavedAtDefaultAndMissingColumn(t *testing.T) {
	t.Parallel()
	db := newOrdersDB(t)
	d, _, err := createOrder(t.Context(), db, idemKey(t, "user-1", "stamp-key-01", `{"amount_cents":1}`), 1)
	require.NoError(t, err)
	require.Equal(t, idempotency.DecisionNew, d)
	var savedAt time.Time
	require.NoError(t, db.NewSelect().Table("orders").Column("idem_saved_at").Where("idem_request_id = ?", "stamp-key-01").Scan(t.Context(), &savedAt))
	require.WithinDuration(t, time.Now(), savedAt, time.Minute, "rule: Insert's row is stamped by the DEFAULT")

	_, err = db.ExecContext(t.Context(), `CREATE TABLE legacy (id bigint PRIMARY KEY, idem_request_id varchar(128))`)
	require.NoError(t, err)
	exp, err := pgidem.NewExpirer(db, "legacy")
	require.NoError(t, err)
	_, err = exp.ExpireRecords(t.Context(), time.Now(), 10)
	require.Error(t, err, "a table without idem_saved_at is an error")

	_, err = pgidem.NewExpirer(db, `orders"; DROP TABLE orders; --`)
	require.Error(t, err)
}
