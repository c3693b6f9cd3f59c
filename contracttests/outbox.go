// Package contracttests holds the behaviour every adapter of a core port must
// show. Adapters call RunXxx from their own _test.go files with a factory
// that returns a store seeing no other test's data.
package contracttests

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// OutboxCaps tunes RunOutboxStore and carries its outage hook. Every case
// of the port contract is mandatory: a store that is not safe for
// concurrent use does not satisfy ports.OutboxRelayStore, so nothing here
// turns cases off.
type OutboxCaps struct {
	// Workers is how many goroutines the concurrency case runs. Default 4.
	Workers int
	// ConcurrentEvents is how many events the concurrency case delivers.
	// Default 200.
	ConcurrentEvents int
	// Outage takes the store's backing service away (see Outage).
	// Required: the outage case fails without it.
	Outage Outage[ports.OutboxStore]
}

// RunOutboxStore checks a ports.OutboxStore against every documented
// sentence of ports.OutboxWriter, ports.OutboxRelayStore and
// ports.OutboxOperatorStore, using only the port. newStore must return an
// empty store that no other case shares. Cases are parallel and named
// Method/Behaviour; times are fixed instants passed as arguments.
func RunOutboxStore(t *testing.T, caps OutboxCaps, newStore func(t *testing.T) ports.OutboxStore) {
	t.Helper()
	runOutboxAppend(t, newStore)
	runOutboxClaim(t, newStore)
	runOutboxComplete(t, newStore)
	runOutboxFailRenewRelease(t, newStore)
	runOutboxRecover(t, newStore)
	runOutboxOperator(t, newStore)
	runOutboxConsumerFailure(t, newStore)
	runOutboxConsumption(t, newStore)
	runOutboxOrdered(t, newStore)
	runOutboxConcurrency(t, caps, newStore)
	runOutboxRecoverRace(t, newStore)
	runOutboxRaces(t, newStore)
	runOutboxOutage(t, caps, newStore)
}

func runOutboxAppend(t *testing.T, newStore func(t *testing.T) ports.OutboxStore) {
	t.Run("Append/StoresPendingEventsAsGiven", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		evs := b.seed(t0, 2, "order.created")
		for _, want := range evs {
			got := b.get(want.EventID)
			require.Positive(t, got.ID, "store assigns an id to %s", want.EventID)
			want.ID = got.ID
			requireSameIdentity(t, want, got, "appended event")
			require.Equal(t, outbox.Pending, got.Status, "appended event %s", want.EventID)
			require.Equal(t, want.EventType, got.EventType)
			require.Equal(t, want.BusinessKey, got.BusinessKey)
			require.Equal(t, want.ResourceType+"/"+want.ResourceID, got.ResourceType+"/"+got.ResourceID)
			require.Zero(t, got.RetryCount)
			require.Equal(t, lease.Lease{}, got.Lease, "a new event is unleased with token 0")
			requireTime(t, t0, got.NextAttemptAt, "next_attempt_at")
			requireTime(t, t0, got.CreatedAt, "created_at")
			require.Nil(t, got.DeliveredAt)
		}
	})

	t.Run("Append/DuplicateEventIDIsConflictAndStoresNothing", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		first := b.seed(t0, 1, "order.created")[0]
		fresh, dup := event(t, t0, "order.created"), first
		dup.AggregateID = "other"
		err := b.store.Append(b.ctx, fresh, dup)
		require.ErrorIs(t, err, ports.ErrConflict, "rule: an event_id is stored once; appending %s again must conflict", first.EventID)
		_, err = b.store.Get(b.ctx, fresh.EventID)
		require.ErrorIs(t, err, ports.ErrNotFound, "rule: a conflicting Append stores none of its events, yet %s was stored", fresh.EventID)
		require.Equal(t, first.AggregateID, b.get(first.EventID).AggregateID, "the original row must be unchanged")

		twin := event(t, t0, "order.created")
		require.ErrorIs(t, b.store.Append(b.ctx, twin, twin), ports.ErrConflict, "a duplicate inside one Append must conflict")
		_, err = b.store.Get(b.ctx, twin.EventID)
		require.ErrorIs(t, err, ports.ErrNotFound, "rule: a conflicting Append stores nothing")
	})

	t.Run("Append/RefusesEventsNotBuiltWithNew", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		delivered := event(t, t0, "order.created")
		delivered.Status = outbox.Delivered
		for name, ev := range map[string]outbox.Event{"zero event": {}, "non-pending": delivered} {
			require.Error(t, b.store.Append(b.ctx, ev), "append %s must be refused", name)
		}
		got, err := b.store.List(b.ctx, ports.OutboxFilter{})
		require.NoError(t, err)
		require.Empty(t, got, "refused events must not be stored")
	})

	t.Run("Get/UnknownIsNotFound", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		for _, id := range []string{"6f1c1d2e-8a4b-4c3d-9e8f-0a1b2c3d4e5f", "not-a-uuid"} {
			_, err := b.store.Get(b.ctx, id)
			require.ErrorIs(t, err, ports.ErrNotFound, "get %q", id)
		}
	})
}

func runOutboxClaim(t *testing.T, newStore func(t *testing.T) ports.OutboxStore) {
	t.Run("Claim/DueEventsOldestFirst", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		mid := b.seed(t0.Add(-2*time.Second), 1, "order.created")[0]
		newest := b.seed(t0.Add(-1*time.Second), 1, "order.created")[0]
		oldest := b.seed(t0.Add(-3*time.Second), 1, "order.created")[0]

		got := b.claim("relay-a", t0, 10)
		require.Equal(t, eventIDs([]outbox.Event{oldest, mid, newest}), eventIDs(got), "rule: claim returns due events oldest next_attempt_at first")
		for _, ev := range got {
			require.Equal(t, outbox.Delivering, ev.Status, "claimed %s", ev.EventID)
			require.Equal(t, "relay-a", ev.Lease.Owner)
			requireTime(t, t0.Add(leaseFor), ev.Lease.ExpiresAt, "lease expiry = now + LeaseFor")
		}
		require.JSONEq(t, string(oldest.Payload), string(got[0].Payload), "claim returns the payload")
	})

	t.Run("Claim/RespectsLimit", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		b.seed(t0, 5, "order.created")
		require.Len(t, b.claim("relay-a", t0, 2), 2, "claim limit 2")
		require.Len(t, b.claim("relay-b", t0, 10), 3, "the rest")
	})

	t.Run("Claim/SkipsNotDue", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.seed(t0.Add(time.Minute), 1, "order.created")[0]
		got, err := b.store.Claim(b.ctx, ports.ClaimParams{Owner: "relay-a", Limit: 10, LeaseFor: leaseFor, Now: t0})
		require.NoError(t, err, "nothing due is not an error")
		require.Empty(t, got, "rule: an event due at %s is not claimable at %s", ev.NextAttemptAt, t0)
		require.Len(t, b.claim("relay-a", t0.Add(time.Minute), 10), 1, "due exactly at next_attempt_at")
	})

	t.Run("Claim/DelayedEventWaitsForNotBefore", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := delayed(t, t0, t0.Add(time.Hour), "order.reminded")
		require.NoError(t, b.store.Append(b.ctx, ev))
		stored, err := b.store.Get(b.ctx, ev.EventID)
		require.NoError(t, err)
		requireTime(t, t0.Add(time.Hour), stored.NotBefore, "not_before stored")
		requireTime(t, t0, stored.CreatedAt, "created_at is the commit, not the due time")
		require.Empty(t, b.claim("relay-a", t0.Add(time.Hour-time.Second), 10), "rule: a delayed event is not claimable before not_before")
		got := b.claim("relay-a", t0.Add(time.Hour), 10)
		require.Len(t, got, 1, "claimable at not_before")
		requireTime(t, t0.Add(time.Hour), got[0].NotBefore, "the claimed event carries not_before (delivery lag counts from it)")
		requireTime(t, t0.Add(time.Hour), got[0].DueAt(), "due at not_before")

		plain := b.seed(t0, 1, "order.created")[0]
		again, err := b.store.Get(b.ctx, plain.EventID)
		require.NoError(t, err)
		require.True(t, again.NotBefore.IsZero(), "an event that is not delayed has no not_before")
	})

	t.Run("Claim/SkipsRowsLeasedToOthers", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		b.seed(t0, 3, "order.created")
		require.Len(t, b.claim("relay-a", t0, 3), 3)
		require.Empty(t, b.claim("relay-b", t0.Add(30*time.Second), 3), "rule: rows leased to relay-a are not claimable by relay-b")
		require.Empty(t, b.claim("relay-b", t0.Add(2*leaseFor), 3), "rule: an expired lease is left to RecoverExpired, not re-claimed")
	})

	t.Run("Claim/IncrementsFencingToken", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		first := b.claimOne("relay-a")
		require.Equal(t, int64(1), first.Lease.Token, "first claim takes token 1")
		lost, err := b.store.Release(b.ctx, "relay-a", t0, []ports.LeaseRef{ref(first)})
		require.NoError(t, err)
		require.Empty(t, lost)
		second := b.claim("relay-b", t0, 1)
		require.Len(t, second, 1)
		require.Equal(t, int64(2), second[0].Lease.Token, "rule: every claim increments the fencing token")
	})

	t.Run("Claim/RejectsInvalidParams", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		b.seed(t0, 1, "order.created")
		for name, p := range map[string]ports.ClaimParams{
			"empty owner":    {Limit: 1, LeaseFor: leaseFor, Now: t0},
			"zero limit":     {Owner: "a", LeaseFor: leaseFor, Now: t0},
			"zero lease":     {Owner: "a", Limit: 1, Now: t0},
			"lease over max": {Owner: "a", Limit: 1, LeaseFor: lease.MaxTTL + time.Second, Now: t0},
		} {
			_, err := b.store.Claim(b.ctx, p)
			require.Error(t, err, "claim with %s", name)
		}
		require.Len(t, b.claim("relay-a", t0, 1), 1, "refused claims must not lease anything")
	})
}

func runOutboxComplete(t *testing.T, newStore func(t *testing.T) ports.OutboxStore) {
	t.Run("Complete/OwnerMarksDelivered", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.claimOne("relay-a")
		at := t0.Add(10 * time.Second)
		lost, err := b.store.Complete(b.ctx, "relay-a", at, []ports.LeaseRef{ref(ev)})
		require.NoError(t, err)
		require.Empty(t, lost, "the owner with the current token holds a live lease")
		got := b.get(ev.EventID)
		require.Equal(t, outbox.Delivered, got.Status)
		require.NotNil(t, got.DeliveredAt, "delivered_at must be set")
		requireTime(t, at, *got.DeliveredAt, "delivered_at")
		require.Equal(t, ev.Lease.Token, got.Lease.Token, "the token is kept")
		require.Empty(t, b.claim("relay-b", t0.Add(time.Hour), 1), "a delivered row is never claimed again")
	})

	t.Run("Complete/LostLeaseChangesNothing", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name  string
			owner string
			token int64 // added to the real token
			at    time.Duration
		}{
			{"NonOwner", "relay-b", 0, time.Second},
			{"StaleToken", "relay-a", -1, time.Second},
			{"FutureToken", "relay-a", +1, time.Second},
			{"AtExpiry", "relay-a", 0, leaseFor},
			{"AfterExpiry", "relay-a", 0, leaseFor + time.Second},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				b := newOutboxBundle(t, newStore)
				ev := b.claimOne("relay-a")
				before := b.get(ev.EventID)
				r := ports.LeaseRef{ID: ev.ID, Token: ev.Lease.Token + tc.token}
				lost, err := b.store.Complete(b.ctx, tc.owner, t0.Add(tc.at), []ports.LeaseRef{r})
				require.NoError(t, err)
				require.Equal(t, []int64{ev.ID}, lost,
					"rule: only the lease owner with the current fencing token and an unexpired lease may complete a row (owner %s token %d at +%s)", tc.owner, r.Token, tc.at)
				require.Equal(t, before, b.get(ev.EventID), "rule: a lost row is left untouched")
			})
		}
	})

	t.Run("Complete/ReportsOnlyLostRefs", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		b.seed(t0, 2, "order.created")
		got := b.claim("relay-a", t0, 2)
		require.Len(t, got, 2)
		stale := ports.LeaseRef{ID: got[1].ID, Token: got[1].Lease.Token + 5}
		lost, err := b.store.Complete(b.ctx, "relay-a", t0, []ports.LeaseRef{ref(got[0]), stale})
		require.NoError(t, err)
		require.Equal(t, []int64{got[1].ID}, lost, "only the stale ref is lost")
		require.Equal(t, outbox.Delivered, b.get(got[0].EventID).Status)
		require.Equal(t, outbox.Delivering, b.get(got[1].EventID).Status, "the lost row stays as it was")
	})

	t.Run("Complete/DeliveredNeverChanges", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.claimOne("relay-a")
		r := []ports.LeaseRef{ref(ev)}
		_, err := b.store.Complete(b.ctx, "relay-a", t0, r)
		require.NoError(t, err)
		before := b.get(ev.EventID)
		at := t0.Add(time.Second)
		for name, call := range map[string]func() ([]int64, error){
			"complete": func() ([]int64, error) { return b.store.Complete(b.ctx, "relay-a", at, r) },
			"fail": func() ([]int64, error) {
				return b.store.Fail(b.ctx, "relay-a", at, []ports.FailItem{{Ref: r[0], Decision: finalDecision(at, 1)}})
			},
			"renew":   func() ([]int64, error) { return b.store.Renew(b.ctx, "relay-a", at, leaseFor, r) },
			"release": func() ([]int64, error) { return b.store.Release(b.ctx, "relay-a", at, r) },
		} {
			lost, err := call()
			require.NoError(t, err, name)
			require.Equal(t, []int64{ev.ID}, lost, "rule: a delivered row never changes again, yet %s accepted it", name)
		}
		ids, err := b.store.ReleaseLeases(b.ctx, ports.ReleaseParams{Now: at})
		require.NoError(t, err)
		require.Empty(t, ids, "ReleaseLeases must not touch delivered rows")
		require.Equal(t, before, b.get(ev.EventID), "rule: a delivered row never changes again")
	})
}

func runOutboxFailRenewRelease(t *testing.T, newStore func(t *testing.T) ports.OutboxStore) {
	t.Run("Fail/RetryReturnsToPending", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.claimOne("relay-a")
		at := t0.Add(time.Second)
		d := retryDecision(at, 30*time.Second, 1)
		lost, err := b.store.Fail(b.ctx, "relay-a", at, []ports.FailItem{{Ref: ref(ev), Decision: d}})
		require.NoError(t, err)
		require.Empty(t, lost)
		got := b.get(ev.EventID)
		requireSameIdentity(t, ev, got, "retried event")
		require.Equal(t, outbox.Pending, got.Status)
		require.Equal(t, 1, got.RetryCount)
		requireTime(t, d.NextAttemptAt, got.NextAttemptAt, "next_attempt_at from the decision")
		require.Equal(t, d.Code, got.LastErrorCode)
		require.Equal(t, d.Message, got.LastErrorMessage)
		require.Equal(t, lease.Lease{Token: ev.Lease.Token}, got.Lease, "lease freed, token kept")
		require.Empty(t, b.claim("relay-b", d.NextAttemptAt.Add(-time.Second), 1), "not claimable before next_attempt_at")
		again := b.claim("relay-b", d.NextAttemptAt, 1)
		require.Len(t, again, 1, "claimable again at next_attempt_at")
		require.Equal(t, ev.Lease.Token+1, again[0].Lease.Token)
	})

	t.Run("Fail/FinalMarksFailed", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.claimOne("relay-a")
		lost, err := b.store.Fail(b.ctx, "relay-a", t0, []ports.FailItem{{Ref: ref(ev), Decision: finalDecision(t0, 1)}})
		require.NoError(t, err)
		require.Empty(t, lost)
		got := b.get(ev.EventID)
		require.Equal(t, outbox.Failed, got.Status)
		require.Equal(t, "PAYLOAD_REJECTED", got.LastErrorCode)
		require.Empty(t, b.claim("relay-b", t0.Add(time.Hour), 1), "a failed row is never claimed")
	})

	t.Run("Fail/LostLeaseChangesNothing", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.claimOne("relay-a")
		before := b.get(ev.EventID)
		stale := ports.LeaseRef{ID: ev.ID, Token: ev.Lease.Token - 1}
		for name, call := range map[string]func() ([]int64, error){
			"stale token": func() ([]int64, error) {
				return b.store.Fail(b.ctx, "relay-a", t0, []ports.FailItem{{Ref: stale, Decision: finalDecision(t0, 1)}})
			},
			"expired": func() ([]int64, error) {
				return b.store.Fail(b.ctx, "relay-a", t0.Add(leaseFor), []ports.FailItem{{Ref: ref(ev), Decision: finalDecision(t0, 1)}})
			},
			"non-owner": func() ([]int64, error) {
				return b.store.Fail(b.ctx, "relay-b", t0, []ports.FailItem{{Ref: ref(ev), Decision: finalDecision(t0, 1)}})
			},
		} {
			lost, err := call()
			require.NoError(t, err, name)
			require.Equal(t, []int64{ev.ID}, lost, "rule: only the lease owner with the current fencing token and a live lease may fail a row (%s)", name)
		}
		require.Equal(t, before, b.get(ev.EventID), "rule: lost rows are left untouched")
	})

	t.Run("Renew/ExtendsLiveLease", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.claimOne("relay-a")
		at := t0.Add(50 * time.Second)
		lost, err := b.store.Renew(b.ctx, "relay-a", at, leaseFor, []ports.LeaseRef{ref(ev)})
		require.NoError(t, err)
		require.Empty(t, lost)
		got := b.get(ev.EventID)
		requireTime(t, at.Add(leaseFor), got.Lease.ExpiresAt, "renewed expiry = now + leaseFor")
		require.Equal(t, ev.Lease.Token, got.Lease.Token, "rule: renew keeps the token")
		lost, err = b.store.Complete(b.ctx, "relay-a", t0.Add(leaseFor+time.Second), []ports.LeaseRef{ref(ev)})
		require.NoError(t, err)
		require.Empty(t, lost, "the renewed lease is live past the original expiry")
	})

	t.Run("Renew/ExpiredOrForeignIsLost", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.claimOne("relay-a")
		lost, err := b.store.Renew(b.ctx, "relay-b", t0, leaseFor, []ports.LeaseRef{ref(ev)})
		require.NoError(t, err)
		require.Equal(t, []int64{ev.ID}, lost, "rule: only the owner may renew")
		lost, err = b.store.Renew(b.ctx, "relay-a", t0.Add(leaseFor), leaseFor, []ports.LeaseRef{ref(ev)})
		require.NoError(t, err)
		require.Equal(t, []int64{ev.ID}, lost, "rule: an expired lease (now >= expiry) cannot be renewed")
		requireTime(t, ev.Lease.ExpiresAt, b.get(ev.EventID).Lease.ExpiresAt, "expiry unchanged")
	})

	t.Run("Release/ReturnsToPendingWithoutAttempt", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.claimOne("relay-a")
		at := t0.Add(5 * time.Second)
		lost, err := b.store.Release(b.ctx, "relay-a", at, []ports.LeaseRef{ref(ev)})
		require.NoError(t, err)
		require.Empty(t, lost)
		got := b.get(ev.EventID)
		require.Equal(t, outbox.Pending, got.Status)
		require.Zero(t, got.RetryCount, "rule: release does not count an attempt")
		requireTime(t, at, got.NextAttemptAt, "released rows are due at now")
		require.Equal(t, lease.Lease{Token: ev.Lease.Token}, got.Lease, "lease freed, token kept")
	})

	t.Run("Release/ExpiredLeaseNotTakenOver", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.claimOne("relay-a")
		lost, err := b.store.Release(b.ctx, "relay-a", t0.Add(2*leaseFor), []ports.LeaseRef{ref(ev)})
		require.NoError(t, err)
		require.Empty(t, lost, "rule: a holder may release after expiry while nobody took over")
		require.Equal(t, outbox.Pending, b.get(ev.EventID).Status)
	})

	t.Run("Release/ForeignOrStaleIsLost", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.claimOne("relay-a")
		before := b.get(ev.EventID)
		for name, r := range map[string]struct {
			owner string
			ref   ports.LeaseRef
		}{
			"non-owner":   {"relay-b", ref(ev)},
			"stale token": {"relay-a", ports.LeaseRef{ID: ev.ID, Token: ev.Lease.Token - 1}},
		} {
			lost, err := b.store.Release(b.ctx, r.owner, t0, []ports.LeaseRef{r.ref})
			require.NoError(t, err, name)
			require.Equal(t, []int64{ev.ID}, lost, "rule: only the owner with the current token may release (%s)", name)
		}
		require.Equal(t, before, b.get(ev.EventID))
	})
}

func runOutboxRecover(t *testing.T, newStore func(t *testing.T) ports.OutboxStore) {
	t.Run("RecoverExpired/RequeuesCountingAnAttempt", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.claimOne("relay-a")
		_, err := b.store.Fail(b.ctx, "relay-a", t0, []ports.FailItem{{Ref: ref(ev), Decision: retryDecision(t0, 0, 1)}})
		require.NoError(t, err)
		held := b.claim("relay-a", t0, 1)
		require.Len(t, held, 1)

		require.Zero(t, b.recover(t0.Add(leaseFor-time.Nanosecond), 10).Recovered(), "rule: a live lease is not recovered")
		at := t0.Add(leaseFor)
		res := b.recover(at, 10)
		require.Equal(t, ports.RecoverResult{Requeued: 1}, res, "rule: a lease that expired at or before now is recovered, back to pending before the last attempt")

		got := b.get(ev.EventID)
		requireSameIdentity(t, ev, got, "recovered event")
		require.Equal(t, outbox.Pending, got.Status)
		require.Equal(t, 2, got.RetryCount, "rule: a recovered lease counts as a delivery attempt (retry_count+1)")
		require.Equal(t, outbox.CodeLeaseExpired, got.LastErrorCode, "rule: recovery records why the attempt failed")
		require.Equal(t, outbox.LeaseExpiredMessage, got.LastErrorMessage)
		requireBackoff(t, recoverPolicy, 2, at, got.NextAttemptAt, "rule: a recovered row is due after the policy's backoff for its attempt")
		require.Equal(t, lease.Lease{Token: held[0].Lease.Token}, got.Lease, "rule: recovery frees the lease and keeps the token")
		require.Empty(t, b.claim("relay-b", at, 1), "not claimable during the backoff")
		next := b.claim("relay-b", got.NextAttemptAt, 1)
		require.Len(t, next, 1)
		require.Greater(t, next[0].Lease.Token, held[0].Lease.Token, "rule: the next claim gets a higher token")
	})

	// Regression: an event that kills every relay holding it (OOM, a
	// crash) must end, not be handed to the next victim forever.
	t.Run("RecoverExpired/RepeatedExpiryEndsFailed", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.seed(t0, 1, "order.created")[0]
		at := t0
		var token int64
		for i := 1; i <= recoverPolicy.MaxAttempts; i++ {
			held := b.claim("relay-a", at, 1)
			require.Len(t, held, 1, "attempt %d: the recovered event is claimable again after its backoff", i)
			token = held[0].Lease.Token
			at = at.Add(leaseFor) // the relay died holding it
			res := b.recover(at, 10)
			got := b.get(ev.EventID)
			require.Equal(t, i, got.RetryCount, "rule: each recovery counts a delivery attempt (retry_count+1)")
			if i < recoverPolicy.MaxAttempts {
				require.Equal(t, ports.RecoverResult{Requeued: 1}, res, "attempt %d of %d", i, recoverPolicy.MaxAttempts)
				require.Equal(t, outbox.Pending, got.Status, "attempt %d of %d: back to pending", i, recoverPolicy.MaxAttempts)
				requireBackoff(t, recoverPolicy, i, at, got.NextAttemptAt, "attempt %d: due after the backoff", i)
				at = got.NextAttemptAt
				continue
			}
			require.Equal(t, ports.RecoverResult{Failed: []ports.RecoveredFailure{{ID: got.ID, EventID: ev.EventID, EventType: ev.EventType, RetryCount: i}}}, res,
				"rule: the recovery that uses the last attempt reports the event failed")
		}
		got := b.get(ev.EventID)
		require.Equal(t, outbox.Failed, got.Status, "rule: an event whose lease expires on its last attempt ends failed, not claimed forever")
		require.Equal(t, outbox.CodeLeaseExpired, got.LastErrorCode)
		require.Equal(t, outbox.LeaseExpiredMessage, got.LastErrorMessage)
		requireSameIdentity(t, ev, got, "failed by recovery")
		require.Equal(t, lease.Lease{Token: token}, got.Lease, "rule: recovery frees the lease and keeps the token")
		require.Nil(t, got.DeliveredAt)
		require.Empty(t, b.claim("relay-a", at.Add(time.Hour), 1), "a failed event is not claimed")
		require.Zero(t, b.recover(at.Add(time.Hour), 10).Recovered(), "nor recovered again")
		st, err := b.store.Stats(b.ctx, at)
		require.NoError(t, err)
		require.Equal(t, ports.OutboxStats{Failed: 1}, ports.OutboxStats{Pending: st.Pending, Delivering: st.Delivering, Failed: st.Failed, ExpiredLeases: st.ExpiredLeases},
			"the failed-rows gauge counts it")
	})

	t.Run("RecoverExpired/EachRowCountsItsOwnAttempts", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		fresh, last := b.seed(t0, 1, "order.created")[0], b.seed(t0, 1, "order.shipped")[0]
		for _, ev := range b.claim("relay-a", t0, 2) {
			if ev.EventID == last.EventID { // one attempt left
				_, err := b.store.Fail(b.ctx, "relay-a", t0, []ports.FailItem{{Ref: ref(ev), Decision: retryDecision(t0, 0, recoverPolicy.MaxAttempts-1)}})
				require.NoError(t, err)
			}
		}
		require.Len(t, b.claim("relay-a", t0, 2), 1, "re-claim the row that failed once")
		at := t0.Add(leaseFor)
		res := b.recover(at, 10)
		require.Equal(t, 1, res.Requeued)
		require.Len(t, res.Failed, 1)
		require.Equal(t, last.EventID, res.Failed[0].EventID, "rule: only the row on its last attempt fails")
		require.Equal(t, "order.shipped", res.Failed[0].EventType)
		require.Equal(t, recoverPolicy.MaxAttempts, res.Failed[0].RetryCount)
		got := b.get(fresh.EventID)
		require.Equal(t, outbox.Pending, got.Status)
		require.Equal(t, 1, got.RetryCount, "rule: each row counts from its own retry_count")
		requireBackoff(t, recoverPolicy, 1, at, got.NextAttemptAt, "first attempt's backoff")
		got = b.get(last.EventID)
		require.Equal(t, outbox.Failed, got.Status)
		require.Equal(t, recoverPolicy.MaxAttempts, got.RetryCount)
	})

	t.Run("RecoverExpired/ZeroPolicyMeansDefaultMaxAttempts", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		evs := b.seed(t0, 2, "order.created")
		for i, ev := range b.claim("relay-a", t0, 2) {
			// DefaultMaxAttempts-2 and -1 failed attempts before this one.
			_, err := b.store.Fail(b.ctx, "relay-a", t0, []ports.FailItem{{Ref: ref(ev), Decision: retryDecision(t0, 0, outbox.DefaultMaxAttempts-2+i)}})
			require.NoError(t, err)
		}
		require.Len(t, b.claim("relay-a", t0, 2), 2)
		at := t0.Add(leaseFor)
		res, err := b.store.RecoverExpired(b.ctx, ports.RecoverParams{Now: at, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, 1, res.Requeued)
		require.Len(t, res.Failed, 1)
		require.Equal(t, evs[1].EventID, res.Failed[0].EventID, "rule: a zero MaxAttempts means outbox.DefaultMaxAttempts")
		got := b.get(evs[0].EventID)
		require.Equal(t, outbox.Pending, got.Status)
		requireBackoff(t, outbox.Policy{}, outbox.DefaultMaxAttempts-1, at, got.NextAttemptAt, "a zero Backoff means outbox.DefaultBackoff")
	})

	t.Run("RecoverExpired/JitterIsDrawnPerRow", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		const n = 20
		b.seed(t0, n, "order.created")
		require.Len(t, b.claim("relay-a", t0, n), n)
		at := t0.Add(leaseFor)
		require.Equal(t, n, b.recover(at, n).Requeued)
		due := map[time.Time]bool{}
		evs, err := b.store.List(b.ctx, ports.OutboxFilter{Limit: n})
		require.NoError(t, err)
		for _, ev := range evs {
			requireBackoff(t, recoverPolicy, 1, at, ev.NextAttemptAt, "event %s", ev.EventID)
			due[ev.NextAttemptAt.UTC()] = true
		}
		require.Greater(t, len(due), 1, "rule: each row draws its own jitter, so the rows of a dead batch come due apart (all %d at %v)", n, due)
	})

	t.Run("RecoverExpired/RespectsLimit", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		b.seed(t0, 3, "order.created")
		require.Len(t, b.claim("relay-a", t0, 3), 3)
		require.Equal(t, 2, b.recover(t0.Add(leaseFor), 2).Recovered(), "at most limit rows")
		require.Equal(t, 1, b.recover(t0.Add(leaseFor), 2).Recovered(), "the rest on the next call")
	})

	t.Run("RecoverExpired/StaleHolderCannotWrite", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		stale := b.claimOne("relay-a")
		b.recover(t0.Add(leaseFor), 10)
		at := t0.Add(leaseFor + recoverPolicy.Backoff.Ceiling(1)) // after the backoff
		fresh := b.claim("relay-a", at, 1)                        // same owner name, e.g. a restarted process
		require.Len(t, fresh, 1)

		r := []ports.LeaseRef{ref(stale)}
		lost, err := b.store.Complete(b.ctx, "relay-a", at, r)
		require.NoError(t, err)
		require.Equal(t, []int64{stale.ID}, lost, "rule: a stale fencing token cannot complete a re-claimed row")
		lost, err = b.store.Fail(b.ctx, "relay-a", at, []ports.FailItem{{Ref: r[0], Decision: finalDecision(at, 1)}})
		require.NoError(t, err)
		require.Equal(t, []int64{stale.ID}, lost, "rule: a stale fencing token cannot fail a re-claimed row")
		lost, err = b.store.Release(b.ctx, "relay-a", at, r)
		require.NoError(t, err)
		require.Equal(t, []int64{stale.ID}, lost, "rule: a stale fencing token cannot release a re-claimed row")

		lost, err = b.store.Complete(b.ctx, "relay-a", at, []ports.LeaseRef{ref(fresh[0])})
		require.NoError(t, err)
		require.Empty(t, lost, "the current holder completes")
	})
}
