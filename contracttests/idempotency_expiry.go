package contracttests

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/ports"
)

// IdempotencyExpiryHarness is one empty business table whose rows carry
// idempotency records, for RunIdempotencyExpirerSuite.
type IdempotencyExpiryHarness struct {
	// Expirer is the port under test, on the harness's table.
	Expirer ports.IdempotencyExpirer
	// SaveFunc runs the table's idempotent create command for key (a new
	// business row with its record and stored response), with the record
	// saved at savedAt. It fails the test if the key is still taken.
	SaveFunc func(t *testing.T, key string, savedAt time.Time)
	// PlainRowFunc inserts a business row without an idempotency record
	// (an import, an admin tool).
	PlainRowFunc func(t *testing.T)
	// HasRecordFunc reports whether key's record (and stored response)
	// still exists.
	HasRecordFunc func(t *testing.T, key string) bool
	// RowsFunc counts the business rows.
	RowsFunc func(t *testing.T) int
}

var idemT0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// RunIdempotencyExpirerSuite checks an IdempotencyExpirer against the
// contract documented on ports.IdempotencyExpirer.
func RunIdempotencyExpirerSuite(t *testing.T, newHarness func(t *testing.T) IdempotencyExpiryHarness) {
	t.Helper()

	t.Run("ExpireRecords/ClearsRecordsSavedAtOrBeforeCutoffKeepingRows", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.SaveFunc(t, "old-key-0001", idemT0)
		h.SaveFunc(t, "new-key-0001", idemT0.Add(time.Second))
		h.PlainRowFunc(t)
		n, err := h.Expirer.ExpireRecords(t.Context(), idemT0, 10)
		require.NoError(t, err)
		require.Equal(t, 1, n, "rule: only the record saved at or before the cutoff is cleared; rows without a record are not counted")
		require.False(t, h.HasRecordFunc(t, "old-key-0001"), "rule: the expired key and stored response are cleared")
		require.True(t, h.HasRecordFunc(t, "new-key-0001"), "rule: a younger record stays")
		require.Equal(t, 3, h.RowsFunc(t), "rule: business rows are never deleted")
		n, err = h.Expirer.ExpireRecords(t.Context(), idemT0, 10)
		require.NoError(t, err)
		require.Zero(t, n, "rule: a cleared record is not counted again")
	})

	t.Run("ExpireRecords/ExpiredKeyIsFreeForANewRequest", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.SaveFunc(t, "reused-key-01", idemT0)
		_, err := h.Expirer.ExpireRecords(t.Context(), idemT0.Add(time.Hour), 10)
		require.NoError(t, err)
		h.SaveFunc(t, "reused-key-01", idemT0.Add(2*time.Hour)) // fails the test while the key is taken
		require.True(t, h.HasRecordFunc(t, "reused-key-01"))
		require.Equal(t, 2, h.RowsFunc(t), "rule: a request with an expired key is a new request")
	})

	t.Run("ExpireRecords/RespectsLimitOldestFirst", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		for i := range 3 {
			h.SaveFunc(t, fmt.Sprintf("limit-key-%d", i), idemT0.Add(time.Duration(i)*time.Second))
		}
		n, err := h.Expirer.ExpireRecords(t.Context(), idemT0.Add(time.Hour), 2)
		require.NoError(t, err)
		require.Equal(t, 2, n, "rule: at most limit records per call")
		require.True(t, h.HasRecordFunc(t, "limit-key-2"), "rule: oldest first: the newest is left")
		n, err = h.Expirer.ExpireRecords(t.Context(), idemT0.Add(time.Hour), 2)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		_, err = h.Expirer.ExpireRecords(t.Context(), idemT0, 0)
		require.Error(t, err, "rule: limit must be at least 1")
	})

	t.Run("ExpireRecords/ConcurrentCallsClearEachRecordOnce", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		const records = 20
		for i := range records {
			h.SaveFunc(t, fmt.Sprintf("conc-key-%02d", i), idemT0)
		}
		var (
			mu    sync.Mutex
			total int
			wg    sync.WaitGroup
		)
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				for {
					n, err := h.Expirer.ExpireRecords(t.Context(), idemT0, 3)
					if err != nil {
						errs <- err
						return
					}
					if n == 0 {
						return
					}
					mu.Lock()
					total += n
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, records, total, "rule: concurrent calls clear each record exactly once")
	})
}
