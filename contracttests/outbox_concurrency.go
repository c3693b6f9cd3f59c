package contracttests

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

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
						errs <- fmt.Errorf("rule: only the lease owner may complete a row: %s completed %v of %s's rows %v (err %w)", thief, ids, owner, lost, err)
						return
					}
					lost, err = b.store.Complete(b.ctx, owner, t0, r)
					if err != nil || len(lost) > 0 {
						errs <- fmt.Errorf("%s complete own rows %v: lost %v, err %w", owner, ids, lost, err)
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

// outboxRounds is how many times the stale finish race runs, and
// claimRounds the claimers' race (each of its rounds is 8 claims by each
// of 6 claimers, so a non-atomic claim shows in the first round).
const (
	outboxRounds = 20
	claimRounds  = 10
)

func runOutboxRaces(t *testing.T, newStore func(t *testing.T) ports.OutboxStore) {
	// Claimers start together on one backlog. Claim picks and leases its
	// rows in one atomic step (SKIP LOCKED on Postgres), so no row is handed
	// to two of them; a claim that selects due rows and then updates them
	// by id, without locking or re-checking the status, hands the same row
	// to two claimers here.
	t.Run("Concurrent/ClaimersNeverShareARow", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		const claimers, backlog = 6, 24
		for round := range claimRounds {
			b.seed(t0, backlog, "order.created")
			start := make(chan struct{})
			var (
				wg     sync.WaitGroup
				mu     sync.Mutex
				holder = map[int64]string{}
				shared []string
			)
			errs := make(chan error, claimers)
			for w := range claimers {
				wg.Go(func() {
					owner := fmt.Sprintf("relay-%d-%d", round, w)
					<-start
					for {
						claimed, err := b.store.Claim(b.ctx, ports.ClaimParams{Owner: owner, Limit: 3, LeaseFor: leaseFor, Now: t0})
						if err != nil {
							errs <- fmt.Errorf("%s claim: %w", owner, err)
							return
						}
						if len(claimed) == 0 {
							return
						}
						mu.Lock()
						for _, ev := range claimed {
							if other, ok := holder[ev.ID]; ok {
								shared = append(shared, fmt.Sprintf("row %d to %s and %s", ev.ID, other, owner))
							}
							holder[ev.ID] = owner
						}
						mu.Unlock()
					}
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.Empty(t, shared, "rule: two callers never hold the same row at once (round %d: concurrent claims handed out %v)", round, shared)
			require.Len(t, holder, backlog, "round %d: every due row is claimed by someone", round)
		}
	})

	// A holder finishes its rows (Complete, or Fail for good) while the
	// sweeper recovers their expired leases and a relay re-claims them.
	// The re-claim has the same owner name (a restarted relay that kept its
	// id), so only the fencing token tells the claims apart; in the stale
	// holder's own clock its lease is still live. Each row must end with
	// exactly one winner: the stale finish or the re-claim, never both. A
	// store that checks the lease and then writes in a second step lets the
	// stale finish land on the re-claimed row.
	t.Run("Concurrent/StaleFinishAfterReclaimIsRefused", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		const owner, rows = "relay-a", 3
		staleNow, reclaimAt := t0.Add(leaseFor/2), t0.Add(leaseFor+time.Second)
		// Recovered rows come due within a second (the backoff) and never
		// run out of attempts here, so the re-claim a second later finds
		// every row the recovery took back.
		policy := outbox.Policy{MaxAttempts: 100, Backoff: outbox.Backoff{Base: time.Second, Max: time.Second}}
		claimAt := reclaimAt.Add(time.Second)
		for round := range outboxRounds {
			b.seed(t0, rows, "order.created")
			held := b.claim(owner, t0, rows)
			require.Len(t, held, rows, "round %d: claim the seeded rows", round)
			r := refs(held)
			useFail := round%2 == 1
			finish := "Complete"
			if useFail {
				finish = "Fail"
			}

			start := make(chan struct{})
			var (
				wg               sync.WaitGroup
				staleLost        []int64
				staleErr         error
				reclaimed        []outbox.Event
				recErr, claimErr error
			)
			wg.Go(func() {
				<-start
				if !useFail {
					staleLost, staleErr = b.store.Complete(b.ctx, owner, staleNow, r)
					return
				}
				items := make([]ports.FailItem, len(r))
				for i := range r {
					items[i] = ports.FailItem{Ref: r[i], Decision: finalDecision(staleNow, 1)}
				}
				staleLost, staleErr = b.store.Fail(b.ctx, owner, staleNow, items)
			})
			wg.Go(func() {
				<-start
				time.Sleep(raceOffset(round)) // land at varying points inside the finish in flight
				if _, recErr = b.store.RecoverExpired(b.ctx, ports.RecoverParams{Now: reclaimAt, Limit: 100, Policy: policy}); recErr != nil {
					return
				}
				// A re-claim may skip a row the stale finish has locked (SKIP
				// LOCKED); it stays Pending and a later round claims it.
				reclaimed, claimErr = b.store.Claim(b.ctx, ports.ClaimParams{Owner: owner, Limit: 100, LeaseFor: leaseFor, Now: claimAt})
			})
			close(start)
			wg.Wait()
			require.NoError(t, errors.Join(staleErr, recErr, claimErr), "round %d: stale %s / recover / re-claim", round, finish)

			lost := map[int64]bool{}
			for _, id := range staleLost {
				lost[id] = true
			}
			again := map[int64]outbox.Event{}
			for _, ev := range reclaimed {
				again[ev.ID] = ev
			}
			for _, ev := range held {
				staleWon, reclaimWon := !lost[ev.ID], again[ev.ID].ID != 0
				require.False(t, staleWon && reclaimWon,
					"rule: a stale lease holder's %s after a re-claim is refused: the fencing token of the claim decides (round %d: row %d was re-claimed with token %d, and the %s with token %d succeeded too)",
					finish, round, ev.ID, again[ev.ID].Lease.Token, finish, ev.Lease.Token)
			}
			if len(reclaimed) > 0 {
				lostNew, err := b.store.Complete(b.ctx, owner, claimAt.Add(time.Second), refs(reclaimed))
				require.NoError(t, err)
				require.Empty(t, lostNew,
					"rule: a stale lease holder's %s after a re-claim is refused: the new holder keeps the rows (round %d: the new holder lost %v)", finish, round, lostNew)
			}
			for _, ev := range held {
				want := outbox.Delivered // the re-claim, or the stale Complete, won
				switch {
				case again[ev.ID].ID == 0 && lost[ev.ID]:
					want = outbox.Pending // recovered, skipped by the re-claim
				case again[ev.ID].ID == 0 && useFail:
					want = outbox.Failed
				}
				require.Equal(t, want, b.get(ev.EventID).Status, "round %d: row %d ends with its winner's outcome", round, ev.ID)
			}
		}
	})
}

// runOutboxRecoverRace: a lost lease is counted as one attempt, so two
// relays' sweeps running at once must take each expired lease back once.
// A store that reads the expired rows and then updates them without
// locking them (or re-checking their status) lets both sweeps count the
// same row.
func runOutboxRecoverRace(t *testing.T, newStore func(t *testing.T) ports.OutboxStore) {
	t.Run("Concurrent/SweepsCountEachLeaseOnce", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		const rows, sweepers = 30, 4
		policy := outbox.Policy{MaxAttempts: 100, Backoff: outbox.Backoff{Base: time.Second, Max: time.Second}}
		for round := range outboxRounds {
			at := t0.Add(time.Duration(round) * 2 * leaseFor)
			b.seed(at, rows, "order.created")
			held := b.claim("relay-a", at, rows)
			require.Len(t, held, rows, "round %d: claim the seeded rows", round)
			start := make(chan struct{})
			var wg sync.WaitGroup
			results := make([]ports.RecoverResult, sweepers)
			errs := make([]error, sweepers)
			for i := range sweepers {
				wg.Go(func() {
					<-start
					results[i], errs[i] = b.store.RecoverExpired(b.ctx, ports.RecoverParams{Now: at.Add(leaseFor), Limit: 7, Policy: policy})
				})
			}
			close(start)
			wg.Wait()
			require.NoError(t, errors.Join(errs...), "round %d", round)
			total := 0
			for _, r := range results {
				total += r.Recovered()
			}
			// Sweeps with a limit of 7 may leave rows for a later pass;
			// whatever they took, each row once.
			total += b.recover(at.Add(leaseFor), rows).Recovered()
			require.Equal(t, rows, total, "rule: concurrent sweeps take each expired lease back once (round %d)", round)
			for _, ev := range held {
				got := b.get(ev.EventID)
				require.Equal(t, 1, got.RetryCount, "rule: concurrent sweeps count a lost lease once (round %d, row %d)", round, ev.ID)
				require.Equal(t, outbox.Pending, got.Status)
			}
			// Deliver them, so the next round claims only its own rows.
			again := b.claim("relay-b", at.Add(leaseFor+time.Second), rows)
			require.Len(t, again, rows, "round %d: every recovered row is due after the 1s backoff", round)
			lost, err := b.store.Complete(b.ctx, "relay-b", at.Add(leaseFor+time.Second), refs(again))
			require.NoError(t, err)
			require.Empty(t, lost)
		}
	})
}

// raceOffset staggers the second party of a race by round, from 0 to
// 1.4ms in 200µs steps (a few round trips to a local database), so across
// the rounds it lands before, inside and after the first party's call in
// flight, however fast the machine answers.
func raceOffset(round int) time.Duration {
	return time.Duration(round%8) * 200 * time.Microsecond
}
