package contracttests

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

var replayReq = outbox.ReplayRequest{Operator: "ops-1", Reason: "队列故障已修复", BatchID: "batch-1"}

func runOutboxOperator(t *testing.T, newStore func(t *testing.T) ports.OutboxStore) {
	t.Run("List/NewestFirstWithFilters", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		a := b.seed(t0, 1, "order.created")[0]
		p := b.seed(t0.Add(time.Second), 1, "order.paid")[0]
		c := b.seed(t0.Add(2*time.Second), 1, "order.created")[0]
		require.Len(t, b.claim("relay-a", t0.Add(time.Hour), 1), 1, "claims a, the oldest")
		for _, tc := range []struct {
			name string
			f    ports.OutboxFilter
			want []outbox.Event
		}{
			{"All", ports.OutboxFilter{}, []outbox.Event{c, p, a}},
			{"Limit", ports.OutboxFilter{Limit: 1}, []outbox.Event{c}},
			{"EventType", ports.OutboxFilter{EventType: "order.created"}, []outbox.Event{c, a}},
			{"Status", ports.OutboxFilter{Status: outbox.Delivering}, []outbox.Event{a}},
			{"CorrelationID", ports.OutboxFilter{CorrelationID: p.CorrelationID}, []outbox.Event{p}},
			{"Aggregate", ports.OutboxFilter{AggregateType: "order", AggregateID: c.AggregateID}, []outbox.Event{c}},
			{"NoMatch", ports.OutboxFilter{EventType: "order.unknown"}, nil},
		} {
			got, err := b.store.List(b.ctx, tc.f)
			require.NoError(t, err, "list %+v", tc.f)
			require.Equal(t, eventIDs(tc.want), eventIDs(got), "list %s %+v: newest first, filtered", tc.name, tc.f)
		}
	})

	t.Run("Replay/OnlyFailedOrStuck", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		failed := b.claimOne("relay-a")
		_, err := b.store.Fail(b.ctx, "relay-a", t0, []ports.FailItem{{Ref: ref(failed), Decision: finalDecision(t0, 4)}})
		require.NoError(t, err)
		delivered := b.claimOne("relay-a")
		_, err = b.store.Complete(b.ctx, "relay-a", t0, []ports.LeaseRef{ref(delivered)})
		require.NoError(t, err)
		expired := b.claimOne("relay-a") // lease ran out at t0+1m
		live := b.seed(t0.Add(4*time.Minute), 1, "order.created")[0]
		require.Len(t, b.claim("relay-b", t0.Add(4*time.Minute), 1), 1, "lease live until t0+5m")
		fresh := b.seed(t0.Add(4*time.Minute), 1, "order.created")[0]
		stuck := b.seed(t0.Add(-time.Hour), 1, "order.created")[0]
		unknown := "6f1c1d2e-8a4b-4c3d-9e8f-0a1b2c3d4e5f"
		deliveredBefore := b.get(delivered.EventID)

		now := t0.Add(4*time.Minute + 30*time.Second)
		res, err := b.store.Replay(b.ctx, ports.ReplayParams{
			EventIDs:   []string{failed.EventID, delivered.EventID, expired.EventID, live.EventID, fresh.EventID, stuck.EventID, unknown},
			Request:    replayReq,
			Now:        now,
			StuckAfter: 10 * time.Minute,
		})
		require.NoError(t, err)
		require.ElementsMatch(t, []string{failed.EventID, expired.EventID, stuck.EventID}, res.Replayed,
			"rule: only failed events, expired leases and pending rows overdue by StuckAfter are replayed")
		for name, id := range map[string]string{"delivered": delivered.EventID, "live lease": live.EventID, "not yet stuck": fresh.EventID, "unknown": unknown} {
			require.NotEmpty(t, res.Skipped[id], "rule: a %s event is reported in Skipped with a reason; got %v", name, res.Skipped)
		}
		require.Len(t, res.Skipped, 4, "skipped: %v", res.Skipped)
		require.Contains(t, res.Skipped[delivered.EventID], "delivered", "the reason names the status")

		for _, want := range []outbox.Event{failed, expired, stuck} {
			got := b.get(want.EventID)
			requireSameIdentity(t, want, got, "rule: replay keeps event_id and payload")
			require.Equal(t, outbox.Pending, got.Status, "replayed %s", want.EventID)
			require.Zero(t, got.RetryCount, "replay resets retry_count")
			requireTime(t, now, got.NextAttemptAt, "replayed rows are due at now")
			require.Empty(t, got.Lease.Owner, "replay frees the lease")
		}
		require.Equal(t, deliveredBefore, b.get(delivered.EventID), "rule: a delivered event never changes")
		require.Equal(t, outbox.Delivering, b.get(live.EventID).Status, "a live lease is left alone")
		require.Equal(t, lease.Lease{Token: 1}, b.get(expired.EventID).Lease, "replay keeps the fencing token")
	})

	t.Run("Replay/InvalidRequestChangesNothing", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.claimOne("relay-a")
		_, err := b.store.Fail(b.ctx, "relay-a", t0, []ports.FailItem{{Ref: ref(ev), Decision: finalDecision(t0, 1)}})
		require.NoError(t, err)
		bad := replayReq
		bad.Reason = " "
		_, err = b.store.Replay(b.ctx, ports.ReplayParams{EventIDs: []string{ev.EventID}, Request: bad, Now: t0})
		var verr *outbox.ValidationError
		require.ErrorAs(t, err, &verr, "a replay without a reason must be refused")
		require.Equal(t, outbox.Failed, b.get(ev.EventID).Status, "a refused replay changes nothing")
	})

	t.Run("ReleaseLeases/ByOwnerOrAll", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		b.seed(t0, 3, "order.created")
		held := append(b.claim("relay-a", t0, 2), b.claim("relay-b", t0, 1)...)
		require.Len(t, held, 3)
		ids, err := b.store.ReleaseLeases(b.ctx, ports.ReleaseParams{Owner: "relay-a", Now: t0.Add(time.Second)})
		require.NoError(t, err)
		require.ElementsMatch(t, eventIDs(held[:2]), ids, "releases relay-a's live leases only, and names them")
		require.Equal(t, outbox.Delivering, b.get(held[2].EventID).Status, "relay-b keeps its lease")
		ids, err = b.store.ReleaseLeases(b.ctx, ports.ReleaseParams{Now: t0.Add(2 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, []string{held[2].EventID}, ids, "empty owner releases every owner")
		for _, ev := range held {
			got := b.get(ev.EventID)
			require.Equal(t, outbox.Pending, got.Status, "released %s", ev.EventID)
			require.Zero(t, got.RetryCount, "a release is not an attempt")
			require.Equal(t, lease.Lease{Token: 1}, got.Lease, "lease freed, token kept")
		}
		require.Len(t, b.claim("relay-c", t0.Add(3*time.Second), 3), 3, "released rows are claimable at once")
	})

	t.Run("Stats/SummarisesBacklog", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		empty, err := b.store.Stats(b.ctx, t0)
		require.NoError(t, err)
		require.Zero(t, empty.Pending+empty.Delivering+empty.Failed+empty.ExpiredLeases)
		require.Zero(t, empty.OldestPendingAge, "0 when nothing is pending")
		require.Zero(t, empty.OldestDueAge, "0 when nothing is due")
		require.Empty(t, empty.BacklogByType)
		require.Empty(t, empty.RetryHistogram)

		failed := b.claimOne("relay-a")
		_, err = b.store.Fail(b.ctx, "relay-a", t0, []ports.FailItem{{Ref: ref(failed), Decision: finalDecision(t0, 3)}})
		require.NoError(t, err)
		delivered := b.claimOne("relay-a")
		_, err = b.store.Complete(b.ctx, "relay-a", t0, []ports.LeaseRef{ref(delivered)})
		require.NoError(t, err)
		b.claimOne("relay-a") // expires at t0+1m
		b.seed(t0.Add(9*time.Minute), 1, "order.paid")
		require.Len(t, b.claim("relay-b", t0.Add(9*time.Minute), 1), 1, "live until t0+10m")
		b.seed(t0.Add(4*time.Minute+30*time.Second), 2, "order.paid")
		b.seed(t0.Add(time.Hour), 1, "order.created") // pending, not yet due

		now := t0.Add(9*time.Minute + 30*time.Second)
		st, err := b.store.Stats(b.ctx, now)
		require.NoError(t, err)
		require.Equal(t, [3]int64{3, 2, 1}, [3]int64{st.Pending, st.Delivering, st.Failed}, "pending, delivering, failed (delivered rows are not counted)")
		require.Equal(t, int64(1), st.ExpiredLeases, "one delivering lease ran out")
		require.Equal(t, 9*time.Minute+30*time.Second, st.OldestPendingAge, "the oldest undelivered row, a delivering one, was created at t0")
		require.Equal(t, 5*time.Minute, st.OldestDueAge, "the oldest due pending row waits since t0+4m30s")
		require.Equal(t, map[string]int64{"order.paid": 3, "order.created": 2}, st.BacklogByType, "pending+delivering per type")
		require.Equal(t, map[int]int64{0: 5, 3: 1}, st.RetryHistogram, "undelivered rows by retry_count")
	})

	// Delayed rows are not late: they are counted as Scheduled and nowhere
	// else until due, and from then their age counts from not_before.
	t.Run("Stats/DelayedRowsAreScheduledNotLate", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		require.NoError(t, b.store.Append(b.ctx, delayed(t, t0, t0.Add(24*time.Hour), "order.reminded"), delayed(t, t0, t0.Add(2*time.Hour), "order.reminded")))
		b.seed(t0.Add(time.Hour), 1, "order.created")

		st, err := b.store.Stats(b.ctx, t0.Add(90*time.Minute))
		require.NoError(t, err)
		require.Equal(t, int64(2), st.Scheduled, "both delayed rows are scheduled")
		require.Equal(t, int64(1), st.Pending, "only the due row is pending")
		require.Equal(t, 30*time.Minute, st.OldestPendingAge, "age from the due row's created_at; the delayed rows committed at t0 are not 90 min late")
		require.Equal(t, map[string]int64{"order.created": 1}, st.BacklogByType, "scheduled rows are in no backlog")

		st, err = b.store.Stats(b.ctx, t0.Add(3*time.Hour))
		require.NoError(t, err)
		require.Equal(t, [2]int64{1, 2}, [2]int64{st.Scheduled, st.Pending}, "the 2h row is due now")
		require.Equal(t, 2*time.Hour, st.OldestPendingAge, "the created row (t0+1h) is the oldest due; the 2h row counts from its not_before")
		require.Equal(t, map[string]int64{"order.created": 1, "order.reminded": 1}, st.BacklogByType)
	})

	// REGRESSION: the age came from min(next_attempt_at), which backoff
	// pushes into the future, so during a queue outage it read 0.
	t.Run("Stats/AgeRisesWhileBackingOff", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		now := t0.Add(2 * time.Hour)
		b.seed(t0, 3, "order.created") // committed two hours ago
		claimed := b.claim("relay-a", now, 3)
		require.Len(t, claimed, 3)
		// The queue is down: two rows back off into the future, one stays leased.
		_, err := b.store.Fail(b.ctx, "relay-a", now, []ports.FailItem{
			{Ref: ref(claimed[0]), Decision: retryDecision(now, 5*time.Minute, 7)},
			{Ref: ref(claimed[1]), Decision: retryDecision(now, 10*time.Minute, 7)},
		})
		require.NoError(t, err)

		st, err := b.store.Stats(b.ctx, now)
		require.NoError(t, err)
		require.Equal(t, 2*time.Hour, st.OldestPendingAge, "age from created_at of the oldest undelivered row, not next_attempt_at")
		require.Zero(t, st.OldestDueAge, "nothing is due while every row backs off")

		_, err = b.store.Complete(b.ctx, "relay-a", now, []ports.LeaseRef{ref(claimed[2])})
		require.NoError(t, err)
		st, err = b.store.Stats(b.ctx, now.Add(time.Minute))
		require.NoError(t, err)
		require.Equal(t, 2*time.Hour+time.Minute, st.OldestPendingAge, "pending rows backing off still count")

		later := now.Add(11 * time.Minute)
		st, err = b.store.Stats(b.ctx, later)
		require.NoError(t, err)
		require.Equal(t, 6*time.Minute, st.OldestDueAge, "the first retry has been due since now+5m")
	})

	t.Run("PurgeDelivered/OnlyOldDelivered", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		var old []outbox.Event
		for range 2 {
			ev := b.claimOne("relay-a")
			_, err := b.store.Complete(b.ctx, "relay-a", t0, []ports.LeaseRef{ref(ev)})
			require.NoError(t, err)
			old = append(old, ev)
		}
		recent := b.claimOne("relay-a")
		_, err := b.store.Complete(b.ctx, "relay-a", t0.Add(30*time.Second), []ports.LeaseRef{ref(recent)})
		require.NoError(t, err)
		failed := b.claimOne("relay-a")
		_, err = b.store.Fail(b.ctx, "relay-a", t0, []ports.FailItem{{Ref: ref(failed), Decision: finalDecision(t0, 1)}})
		require.NoError(t, err)
		delivering := b.claimOne("relay-a")
		pending := b.seed(t0, 1, "order.created")[0]

		b.consume(append(old, recent)...)  // retention follows consumption
		cutoff := t0.Add(30 * time.Second) // strictly before: recent stays
		for i, want := range []int{1, 1, 0} {
			n, err := b.store.PurgeDelivered(b.ctx, cutoff, 1)
			require.NoError(t, err)
			require.Equal(t, want, n, "purge call %d with limit 1", i+1)
		}
		for _, ev := range old {
			_, err := b.store.Get(b.ctx, ev.EventID)
			require.ErrorIs(t, err, ports.ErrNotFound, "old delivered %s must be purged", ev.EventID)
		}
		n, err := b.store.PurgeDelivered(b.ctx, t0.Add(1000*time.Hour), 100)
		require.NoError(t, err)
		require.Equal(t, 1, n, "only the recent delivered row is left to purge")
		for _, ev := range []outbox.Event{failed, delivering, pending} {
			b.get(ev.EventID) // rule: pending, delivering and failed rows are never deleted
		}
	})
}
