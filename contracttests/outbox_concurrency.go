package contracttests

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

func runOutboxConcurrency(t *testing.T, caps OutboxCaps, newStore func(t *testing.T) ports.OutboxStore) {
	t.Run("Concurrency/EachEventDeliveredOnce", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		workers, total := cmp.Or(caps.Workers, 4), cmp.Or(caps.ConcurrentEvents, 200)
		b.seed(t0, total, "order.created")

		var (
			mu        sync.Mutex
			completes = map[int64]int{} // event row id -> successful completes
			wg        sync.WaitGroup
		)
		errs := make(chan error, workers)
		for w := range workers {
			wg.Go(func() {
				owner, thief := fmt.Sprintf("relay-%d", w), fmt.Sprintf("thief-%d", w)
				for {
					claimed, err := b.store.Claim(b.ctx, ports.ClaimParams{Owner: owner, Limit: 7, LeaseFor: leaseFor, Now: t0})
					if err != nil {
						errs <- fmt.Errorf("%s claim: %w", owner, err)
						return
					}
					if len(claimed) == 0 {
						return // the rest is held by others, who complete it
					}
					r := refs(claimed)
					ids := make([]int64, len(r))
					for i := range r {
						ids[i] = r[i].ID
					}
					lost, err := b.store.Complete(b.ctx, thief, t0, r)
					if err != nil || !sameIDs(lost, ids) {
						errs <- fmt.Errorf("rule: only the lease owner may complete a row: %s completed %v of %s's rows %v (err %v)", thief, ids, owner, lost, err)
						return
					}
					lost, err = b.store.Complete(b.ctx, owner, t0, r)
					if err != nil || len(lost) > 0 {
						errs <- fmt.Errorf("%s complete own rows %v: lost %v, err %v", owner, ids, lost, err)
						return
					}
					mu.Lock()
					for _, id := range ids {
						completes[id]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}

		require.Len(t, completes, total, "every event must be claimed and completed by someone")
		for id, n := range completes {
			require.Equal(t, 1, n, "rule: event row %d must be completed exactly once, got %d", id, n)
		}
		st, err := b.store.Stats(b.ctx, t0)
		require.NoError(t, err)
		require.Equal(t, [3]int64{0, 0, 0}, [3]int64{st.Pending, st.Delivering, st.Failed}, "pending, delivering, failed after the run")
		delivered, err := b.store.List(b.ctx, ports.OutboxFilter{Status: outbox.Delivered, Limit: 500})
		require.NoError(t, err)
		require.Len(t, delivered, min(total, 500), "every event must end delivered")
	})
}

func sameIDs(a, b []int64) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
