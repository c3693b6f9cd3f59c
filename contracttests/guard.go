package contracttests

import (
	"context"
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
			require.Eventually(t, func() bool {
				ok, err := g.Acquire(t.Context(), "job-a", "owner-2", ttl)
				return err == nil && ok
			}, 5*time.Second, 20*time.Millisecond, "rule: an expired guard may be taken by another owner (ttl %s)", short)
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

	t.Run("Outage/EveryMethodUnavailableAndNothingChanges", func(t *testing.T) {
		t.Parallel()
		fx := newGuard(t)
		requireOutageHook(t, fx.Outage == nil, "GuardFixture.Outage")
		requireAcquire(t, fx.Guard, "job-held", "owner-1", ttl, true, "rule: a free key is acquired")

		down, restore := fx.Outage(t, fx.Guard)
		requireUnavailable(t, map[string]outageCall{
			"Acquire": func(ctx context.Context) error { _, err := down.Acquire(ctx, "job-free", "owner-2", ttl); return err },
			"Release": func(ctx context.Context) error { _, err := down.Release(ctx, "job-held", "owner-1"); return err },
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

func requireRelease(t *testing.T, g ports.Guard, key, owner string, want bool, rule string) {
	t.Helper()
	got, err := g.Release(t.Context(), key, owner)
	require.NoError(t, err, "release %s as %s", key, owner)
	require.Equal(t, want, got, "release %s as %s: %s", key, owner, rule)
}
