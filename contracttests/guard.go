package contracttests

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/ports"
)

// GuardFixture is one isolated Guard plus its clock hook.
type GuardFixture struct {
	// Guard is the guard under test; it sees no other test's keys.
	Guard ports.Guard
	// Advance moves the guard's clock forward; nil when it runs on real
	// time (the suite then uses a short ttl and waits).
	Advance func(d time.Duration)
	// Outage takes Guard's backing store away (see Outage). Required: the
	// outage case fails without it.
	Outage Outage[ports.Guard]
}

// guardRounds is how many times the release race runs: enough that a
// non-atomic release hits its window on a loaded machine, few enough that
// the case stays well under a second on Redis.
const guardRounds = 200

// RunGuard checks a Guard against the contract documented on ports.Guard.
// newGuard must return a fresh guard per call.
func RunGuard(t *testing.T, newGuard func(t *testing.T) GuardFixture) {
	t.Helper()
	const ttl = time.Minute

	t.Run("Acquire/Exclusive", func(t *testing.T) {
		t.Parallel()
		g := newGuard(t).Guard

		requireAcquire(t, g, "job-a", "owner-1", ttl, true, "rule: a free key is acquired")
		requireAcquire(t, g, "job-a", "owner-2", ttl, false, "rule: a held key is refused to another owner (false, nil)")
		requireAcquire(t, g, "job-b", "owner-2", ttl, true, "rule: keys are independent")
	})

	t.Run("Release/OnlyOwner", func(t *testing.T) {
		t.Parallel()
		g := newGuard(t).Guard

		requireRelease(t, g, "job-free", "owner-1", false, "rule: releasing a free key reports false")
		requireAcquire(t, g, "job-a", "owner-1", ttl, true, "rule: a free key is acquired")
		requireRelease(t, g, "job-a", "owner-2", false, "rule: only the owner may release a guard")
		requireAcquire(t, g, "job-a", "owner-3", ttl, false, "rule: a release by a non-owner frees nothing")
		requireRelease(t, g, "job-a", "owner-1", true, "rule: the owner releases its guard")
		requireAcquire(t, g, "job-a", "owner-2", ttl, true, "rule: a released key is free again")
	})

	t.Run("Owner/ReportsHolderAndChangesNothing", func(t *testing.T) {
		t.Parallel()
		g := newGuard(t).Guard

		requireOwner(t, g, "job-a", "", "rule: a key never taken has no owner")
		requireAcquire(t, g, "job-a", "v3:abc owner-1", ttl, true, "rule: a free key is acquired")
		requireOwner(t, g, "job-a", "v3:abc owner-1", "rule: Owner returns the holder byte for byte")
		requireOwner(t, g, "job-a", "v3:abc owner-1", "rule: Owner changes nothing")
		requireRelease(t, g, "job-a", "v3:abc owner-1", true, "rule: Owner leaves the hold to its owner")
		requireOwner(t, g, "job-a", "", "rule: a released key has no owner")
	})

	t.Run("Acquire/AfterExpiry", func(t *testing.T) {
		t.Parallel()
		fx := newGuard(t)
		g, short := fx.Guard, 300*time.Millisecond

		requireAcquire(t, g, "job-a", "owner-1", short, true, "rule: a free key is acquired")
		if fx.Advance != nil {
			requireAcquire(t, g, "job-a", "owner-2", ttl, false, "rule: a guard holds until its ttl passes")
			fx.Advance(short + time.Millisecond)
			requireAcquire(t, g, "job-a", "owner-2", ttl, true, "rule: an expired guard may be taken by another owner")
		} else {
			// Real expiry: poll until another owner takes it. The bound is
			// generous (a loaded CI machine once missed 5 s against a
			// container's Redis); the last error says why it did not.
			var ok bool
			var err error
			for deadline := time.Now().Add(time.Minute); !ok && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				ok, err = g.Acquire(t.Context(), "job-a", "owner-2", ttl)
				ok = ok && err == nil
			}
			require.True(t, ok, "rule: an expired guard may be taken by another owner (ttl %s; last error: %v)", short, err)
		}
		requireRelease(t, g, "job-a", "owner-1", false, "rule: an owner whose guard expired cannot release the new holder's")
		requireAcquire(t, g, "job-a", "owner-3", ttl, false, "rule: the new holder keeps the guard")
	})

	t.Run("Concurrent/ExactlyOneWinner", func(t *testing.T) {
		t.Parallel()
		g := newGuard(t).Guard
		const n = 20

		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins []string
			errs []error
		)
		for i := range n {
			wg.Go(func() {
				owner := fmt.Sprintf("owner-%d", i)
				ok, err := g.Acquire(t.Context(), "job-race", owner, ttl)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					errs = append(errs, err)
				case ok:
					wins = append(wins, owner)
				}
			})
		}
		wg.Wait()
		require.Empty(t, errs, "rule: a contended Acquire answers false, nil, not an error")
		require.Len(t, wins, 1, "rule: exactly one of %d concurrent owners acquires a key (winners: %v)", n, wins)
	})

	// The owner releases twice at once (a retried or doubled release)
	// while another owner waits to acquire. Release checks the owner and
	// deletes in one atomic step, so exactly one release frees the hold and
	// the second can never free the new holder's. A GET-then-DEL release
	// fails here: both releases see the old owner, and the second deletes
	// the hold the waiting owner took in between.
	t.Run("Concurrent/ReleaseVsAcquireNeverFreesAnotherOwnersHold", func(t *testing.T) {
		t.Parallel()
		g := newGuard(t).Guard
		for round := range guardRounds {
			key := fmt.Sprintf("job-race-%d", round)
			requireAcquire(t, g, key, "owner-1", ttl, true, "rule: a free key is acquired")

			start := make(chan struct{})
			var (
				wg       sync.WaitGroup
				released [2]bool
				relErr   [2]error
				acquired bool
				acqErr   error
				done     = make(chan struct{})
			)
			for i := range released {
				wg.Go(func() {
					<-start
					released[i], relErr[i] = g.Release(t.Context(), key, "owner-1")
				})
			}
			go func() { wg.Wait(); close(done) }()
			var acq sync.WaitGroup
			acq.Go(func() {
				<-start
				for !acquired && acqErr == nil {
					select {
					case <-done: // one last try once both releases returned
						acquired, acqErr = g.Acquire(t.Context(), key, "owner-2", ttl)
						return
					default:
					}
					acquired, acqErr = g.Acquire(t.Context(), key, "owner-2", ttl)
				}
			})
			close(start)
			acq.Wait()
			<-done

			require.NoError(t, errors.Join(relErr[0], relErr[1], acqErr), "round %d: release/acquire", round)
			require.True(t, released[0] != released[1],
				"rule: of two concurrent releases by the owner exactly one frees the guard (round %d: %v)", round, released)
			require.True(t, acquired, "rule: a released key is free again (round %d: owner-2 never acquired it)", round)
			requireAcquire(t, g, key, "owner-3", ttl, false,
				fmt.Sprintf("rule: a release must never free another owner's hold: the owner check and the delete are one atomic step (round %d: owner-1's second release freed owner-2's hold)", round))
			requireRelease(t, g, key, "owner-2", true, fmt.Sprintf("rule: the new holder keeps the guard (round %d)", round))
		}
	})

	t.Run("Outage/EveryMethodUnavailableAndNothingChanges", func(t *testing.T) {
		t.Parallel()
		fx := newGuard(t)
		requireOutageHook(t, fx.Outage == nil, "GuardFixture.Outage")
		requireAcquire(t, fx.Guard, "job-held", "owner-1", ttl, true, "rule: a free key is acquired")

		down, restore := fx.Outage(t, fx.Guard)
		requireUnavailable(t, map[string]outageCall{
			"Acquire": func(ctx context.Context) error { _, err := down.Acquire(ctx, "job-free", "owner-2", ttl); return err },
			"Release": func(ctx context.Context) error { _, err := down.Release(ctx, "job-held", "owner-1"); return err },
			"Owner":   func(ctx context.Context) error { _, err := down.Owner(ctx, "job-held"); return err },
		})

		restore()
		requireAcquire(t, fx.Guard, "job-held", "owner-2", ttl, false, "after the outage the guard is still held: "+OutageRule)
		requireRelease(t, fx.Guard, "job-free", "owner-2", false, "after the outage the free key is still free: "+OutageRule)
		requireRelease(t, fx.Guard, "job-held", "owner-1", true, "after the outage the owner still holds its guard: "+OutageRule)
	})
}

func requireAcquire(t *testing.T, g ports.Guard, key, owner string, ttl time.Duration, want bool, rule string) {
	t.Helper()
	got, err := g.Acquire(t.Context(), key, owner, ttl)
	require.NoError(t, err, "acquire %s as %s", key, owner)
	require.Equal(t, want, got, "acquire %s as %s: %s", key, owner, rule)
}

func requireOwner(t *testing.T, g ports.Guard, key, want, rule string) {
	t.Helper()
	got, err := g.Owner(t.Context(), key)
	require.NoError(t, err, "owner of %s", key)
	require.Equal(t, want, got, "owner of %s: %s", key, rule)
}

func requireRelease(t *testing.T, g ports.Guard, key, owner string, want bool, rule string) {
	t.Helper()
	got, err := g.Release(t.Context(), key, owner)
	require.NoError(t, err, "release %s as %s", key, owner)
	require.Equal(t, want, got, "release %s as %s: %s", key, owner, rule)
}
