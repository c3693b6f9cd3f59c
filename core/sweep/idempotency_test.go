package sweep_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/startstop"
	"github.com/july/template/core/sweep"
)

// records holds saved-at times; ExpireRecords clears those at or before
// the cutoff, up to limit per call.
type records struct {
	mu      sync.Mutex
	saved   []time.Time
	cutoffs []time.Time
	err     error
}

func (r *records) ExpireRecords(_ context.Context, savedBefore time.Time, limit int) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cutoffs = append(r.cutoffs, savedBefore)
	if r.err != nil {
		return 0, r.err
	}
	n := 0
	kept := r.saved[:0]
	for _, at := range r.saved {
		if n < limit && !at.After(savedBefore) {
			n++
			continue
		}
		kept = append(kept, at)
	}
	r.saved = kept
	return n, nil
}

func TestIdempotencyRetention(t *testing.T) {
	t.Parallel()

	t.Run("ClearsTheWindowInBatchesPerTable", func(t *testing.T) {
		t.Parallel()
		c := &clock{now: t0}
		window := 48 * time.Hour
		old := t0.Add(-window - time.Minute)
		a := &records{saved: []time.Time{old, old, old, old, old, t0.Add(-time.Hour)}}
		b := &records{err: errors.New("table b unreachable")}
		expired := map[string]int{}
		j, err := sweep.NewIdempotencyRetention([]ports.IdempotencyTable{{Name: "a", Records: a}, {Name: "b", Records: b}}, c,
			sweep.IdempotencyRetentionConfig{Window: window, Batch: 2, ExpiredFunc: func(name string, n int) { expired[name] += n }})
		require.NoError(t, err)
		n, err := j.RunOnce(t.Context())
		require.ErrorContains(t, err, "idempotency table b", "one table's failure is reported")
		require.Equal(t, 5, n, "table a is cleared despite b's failure")
		require.Equal(t, map[string]int{"a": 5}, expired)
		require.Len(t, a.saved, 1, "the record inside the window stays")
		require.Len(t, a.cutoffs, 3, "batches of 2 until a call clears fewer")
		require.Equal(t, t0.Add(-window), a.cutoffs[0], "rule: the cutoff is the clock's now minus the window")
	})

	t.Run("ConfigIsValidated", func(t *testing.T) {
		t.Parallel()
		c := &clock{now: t0}
		var ce *startstop.ConfigError
		_, err := sweep.NewIdempotencyRetention(nil, c, sweep.IdempotencyRetentionConfig{Window: time.Hour})
		require.ErrorAs(t, err, &ce)
		require.Equal(t, "Window", ce.Field)
		require.ErrorContains(t, err, "keep records at least as long as callers retry")
		_, err = sweep.NewIdempotencyRetention([]ports.IdempotencyTable{{Name: "a"}}, c, sweep.IdempotencyRetentionConfig{})
		require.ErrorAs(t, err, &ce, "a table without Records")
		_, err = sweep.NewIdempotencyRetention(nil, c, sweep.IdempotencyRetentionConfig{Every: 48 * time.Hour})
		require.ErrorAs(t, err, &ce)
		require.Equal(t, "Every", ce.Field)
		j, err := sweep.NewIdempotencyRetention(nil, c, sweep.IdempotencyRetentionConfig{})
		require.NoError(t, err, "the zero config is valid")
		require.Equal(t, sweep.DefaultIdempotencyRetention, j.Window())
		require.Equal(t, sweep.DefaultIdempotencyRetentionEvery, j.Every())
	})
}
