package contracttests

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// orderedEvent builds an ordered event (NewParams.Ordered) of aggregate
// "card"/aggregateID created at at.
func orderedEvent(t *testing.T, at time.Time, aggregateID, eventType string, ordered bool) outbox.Event {
	t.Helper()
	ev, err := outbox.New(outbox.NewParams{
		EventID: uuid.NewString(), EventType: eventType, PayloadVersion: 1,
		AggregateType: "card", AggregateID: aggregateID, ResourceType: "card", ResourceID: aggregateID,
		RequestID: "req-" + aggregateID, Payload: map[string]any{"card_id": aggregateID}, Now: at, Ordered: ordered,
	})
	require.NoError(t, err, "build ordered test event")
	return ev
}

// appendOrdered appends one ordered event per type to aggregate id, one
// Append call each (one business transaction each), in order.
func (b *outboxBundle) appendOrdered(id string, types ...string) []outbox.Event {
	b.t.Helper()
	evs := make([]outbox.Event, len(types))
	for i, typ := range types {
		evs[i] = orderedEvent(b.t, t0, id, typ, true)
		require.NoError(b.t, b.store.Append(b.ctx, evs[i]), "append %s of %s", typ, id)
	}
	return evs
}

// deliver claims the due events at t0 and completes them; it returns
// their event ids in claim order.
func (b *outboxBundle) deliver(owner string) []string {
	b.t.Helper()
	got := b.claim(owner, t0, 100)
	lost, err := b.store.Complete(b.ctx, owner, t0, refs(got))
	require.NoError(b.t, err)
	require.Empty(b.t, lost)
	return eventIDs(got)
}

// settle finishes the claimed events at at: those named in failed fail
// for good, the others are delivered and returned.
func (b *outboxBundle) settle(owner string, at time.Time, got []outbox.Event, failed ...string) []outbox.Event {
	b.t.Helper()
	var fail []ports.FailItem
	var done []outbox.Event
	for _, ev := range got {
		if slices.Contains(failed, ev.EventID) {
			fail = append(fail, ports.FailItem{Ref: ref(ev), Decision: finalDecision(at, 4)})
		} else {
			done = append(done, ev)
		}
	}
	_, err := b.store.Fail(b.ctx, owner, at, fail)
	require.NoError(b.t, err)
	_, err = b.store.Complete(b.ctx, owner, at, refs(done))
	require.NoError(b.t, err)
	return done
}

func runOutboxOrdered(t *testing.T, newStore func(t *testing.T) ports.OutboxStore) {
	t.Run("Ordered/WaitsForThePreviousEventDeliveredAndConsumed", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		a := b.appendOrdered("card-a", "card.activated", "card.suspended", "card.closed")
		other := b.appendOrdered("card-b", "card.activated")[0]
		free := orderedEvent(t, t0, "card-a", "card.viewed", false) // same aggregate, not ordered
		require.NoError(t, b.store.Append(b.ctx, free))
		require.True(t, b.get(a[0].EventID).Ordered, "ordered is stored")
		require.False(t, b.get(free.EventID).Ordered)

		require.ElementsMatch(t, []string{a[0].EventID, other.EventID, free.EventID}, b.deliver("relay-a"),
			"rule: only the first ordered event of each aggregate is claimable; an unordered one of the same aggregate is not held")
		require.Empty(t, b.claim("relay-a", t0, 100), "rule: delivered is not enough, the previous event must be consumed")
		b.consume(a[0])
		require.Equal(t, []string{a[1].EventID}, b.deliver("relay-b"), "consumed: the next one, and only it")
		b.consume(a[1])
		require.Equal(t, []string{a[2].EventID}, b.deliver("relay-a"))
		require.Empty(t, b.claim("relay-a", t0, 100))
	})

	t.Run("Ordered/OneBatchKeepsItsOrder", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		evs := []outbox.Event{
			orderedEvent(t, t0, "card-x", "card.activated", true),
			orderedEvent(t, t0, "card-y", "card.activated", true),
			orderedEvent(t, t0, "card-x", "card.suspended", true),
		}
		require.NoError(t, b.store.Append(b.ctx, evs...), "one transaction, two aggregates")
		require.ElementsMatch(t, []string{evs[0].EventID, evs[1].EventID}, b.deliver("relay-a"),
			"rule: within one Append, events of an aggregate are ordered as given")
		b.consume(evs[0])
		require.Equal(t, []string{evs[2].EventID}, b.deliver("relay-a"))
	})

	t.Run("Ordered/FailedEventBlocksOnlyItsAggregateUntilReplayed", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		a := b.appendOrdered("card-a", "card.activated", "card.suspended")
		c := b.appendOrdered("card-c", "card.activated", "card.suspended")
		got := b.claim("relay-a", t0, 100)
		require.ElementsMatch(t, []string{a[0].EventID, c[0].EventID}, eventIDs(got))
		b.consume(b.settle("relay-a", t0, got, a[0].EventID)...)
		require.Equal(t, []string{c[1].EventID}, eventIDs(b.claim("relay-a", t0.Add(time.Hour), 100)),
			"rule: a failed event blocks its own aggregate, not the others")

		res, err := b.store.Replay(b.ctx, ports.ReplayParams{EventIDs: []string{a[0].EventID}, Request: replayReq, Now: t0.Add(time.Hour)})
		require.NoError(t, err)
		require.Equal(t, []string{a[0].EventID}, res.Replayed)
		got = b.claim("relay-a", t0.Add(time.Hour), 100)
		require.Equal(t, []string{a[0].EventID}, eventIDs(got), "the replayed event first, its successor still waits")
		_, err = b.store.Complete(b.ctx, "relay-a", t0.Add(time.Hour), refs(got))
		require.NoError(t, err)
		b.consume(got[0])
		require.Equal(t, []string{a[1].EventID}, eventIDs(b.claim("relay-a", t0.Add(time.Hour), 100)), "unblocked by the replay")
	})

	t.Run("Ordered/ConsumerFailureBlocksItsAggregateUntilConsumed", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		a := b.appendOrdered("card-a", "card.activated", "card.suspended")
		require.Equal(t, []string{a[0].EventID}, b.deliver("relay-a"))
		ok, err := b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: a[0].EventID, Code: "CARD_UNKNOWN", Message: "card not found", At: t0})
		require.NoError(t, err)
		require.True(t, ok)
		require.Empty(t, b.claim("relay-a", t0.Add(time.Hour), 100), "rule: a consumer that failed for good blocks the aggregate")
		b.consume(a[0]) // the consumer replay succeeded
		require.Equal(t, []string{a[1].EventID}, eventIDs(b.claim("relay-a", t0.Add(time.Hour), 100)))
	})

	t.Run("Ordered/StuckAggregatesAreListedAndCounted", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		failed := b.appendOrdered("card-f", "card.activated", "card.suspended", "card.closed")
		cons := b.appendOrdered("card-c", "card.activated", "card.suspended")
		alone := b.appendOrdered("card-alone", "card.activated") // fails with nothing behind it
		b.appendOrdered("card-ok", "card.activated", "card.suspended")
		plain := event(t, t0, "order.created") // unordered and failed: not an aggregate's blocker
		require.NoError(t, b.store.Append(b.ctx, plain))

		got := b.claim("relay-a", t0, 100)
		require.Len(t, got, 5)
		b.settle("relay-a", t0.Add(time.Second), got, failed[0].EventID, alone[0].EventID, plain.EventID)
		ok, err := b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: cons[0].EventID, Code: "CARD_UNKNOWN", Message: "card not found", At: t0.Add(2 * time.Second)})
		require.NoError(t, err)
		require.True(t, ok)

		stuck, err := b.store.StuckAggregates(b.ctx, t0.Add(time.Minute), 10)
		require.NoError(t, err)
		require.Len(t, stuck, 2, "rule: an aggregate is stuck when ordered events wait behind a failed event or a failed consumer; got %+v", stuck)
		require.Equal(t, "card-f", stuck[0].AggregateID, "longest stuck first")
		require.Equal(t, ports.StuckFailed, stuck[0].Reason)
		require.Equal(t, failed[0].EventID, stuck[0].Blocker.EventID)
		require.Equal(t, outbox.Failed, stuck[0].Blocker.Status)
		require.EqualValues(t, 2, stuck[0].Waiting)
		require.Equal(t, "card-c", stuck[1].AggregateID)
		require.Equal(t, ports.StuckConsumerFailed, stuck[1].Reason)
		require.Equal(t, "CARD_UNKNOWN", stuck[1].Blocker.LastErrorCode)
		require.EqualValues(t, 1, stuck[1].Waiting)
		requireTime(t, t0.Add(2*time.Second), stuck[1].Since, "since the consumer failed")

		st, err := b.store.Stats(b.ctx, t0.Add(time.Minute))
		require.NoError(t, err)
		require.EqualValues(t, 2, st.StuckAggregates)

		one, err := b.store.StuckAggregates(b.ctx, t0.Add(time.Minute), 1)
		require.NoError(t, err)
		require.Len(t, one, 1, "limit")
		_, err = b.store.StuckAggregates(b.ctx, t0.Add(time.Minute), 0)
		require.Error(t, err, "limit below 1")
	})

	t.Run("Ordered/UnconsumedBlockerIsStuckAfterAWhileAndAConsumedOneNever", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		lost := b.appendOrdered("card-lost", "card.activated", "card.suspended")
		dup := b.appendOrdered("card-dup", "card.activated", "card.suspended", "card.closed")
		require.ElementsMatch(t, []string{lost[0].EventID, dup[0].EventID}, b.deliver("relay-a"))
		// card-dup's first event was consumed, then a duplicate delivery of
		// it failed for good: that failure blocks nothing.
		b.consume(dup[0])
		ok, err := b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: dup[0].EventID, Code: "DUPLICATE_FAILED", Message: "late duplicate", At: t0})
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, []string{dup[1].EventID}, b.deliver("relay-a"), "rule: a consumed event lets its successor go, whatever failure a duplicate left")

		soon, err := b.store.StuckAggregates(b.ctx, t0.Add(ports.StuckUnconsumedAfter-time.Second), 10)
		require.NoError(t, err)
		require.Empty(t, soon, "a delivered event awaiting its consumer is not stuck yet (the reconciler's business)")
		later, err := b.store.StuckAggregates(b.ctx, t0.Add(ports.StuckUnconsumedAfter+time.Second), 10)
		require.NoError(t, err)
		require.Len(t, later, 2, "rule: a blocker delivered long ago and never recorded as consumed is stuck; got %+v", later)
		byID := map[string]ports.StuckAggregate{later[0].AggregateID: later[0], later[1].AggregateID: later[1]}
		require.Equal(t, ports.StuckUnconsumed, byID["card-lost"].Reason)
		require.Equal(t, lost[0].EventID, byID["card-lost"].Blocker.EventID)
		requireTime(t, t0, byID["card-lost"].Since, "since it was delivered")
		require.EqualValues(t, 1, byID["card-lost"].Waiting)
		require.Equal(t, dup[1].EventID, byID["card-dup"].Blocker.EventID, "card-dup waits for its second event now, not for the consumed first")
		require.EqualValues(t, 1, byID["card-dup"].Waiting)
		st, err := b.store.Stats(b.ctx, t0.Add(ports.StuckUnconsumedAfter+time.Second))
		require.NoError(t, err)
		require.EqualValues(t, 2, st.StuckAggregates, "one per aggregate")
	})

	t.Run("Ordered/ParkBlockedMovesAStuckAggregatesEventsAsideUntilTheRecordBringsThemBack", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		a := b.appendOrdered("card-a", "card.activated", "card.suspended", "card.closed")
		flight := b.appendOrdered("card-f", "card.activated", "card.suspended")
		plain := b.seed(t0, 1, "order.created")[0]
		until := t0.Add(time.Hour)

		n, err := b.store.ParkBlocked(b.ctx, t0, until, 100)
		require.NoError(t, err)
		require.Zero(t, n, "rule: events behind a head in flight are not parked")

		got := b.claim("relay-a", t0, 100)
		require.ElementsMatch(t, []string{a[0].EventID, flight[0].EventID, plain.EventID}, eventIDs(got))
		b.settle("relay-a", t0, got, a[0].EventID)
		n, err = b.store.ParkBlocked(b.ctx, t0, until, 100)
		require.NoError(t, err)
		require.Equal(t, 2, n, "rule: every waiting event of a stuck aggregate is parked, and only those")
		for _, ev := range a[1:] {
			requireTime(t, until, b.get(ev.EventID).NextAttemptAt, "parked until")
		}
		requireTime(t, t0, b.get(flight[1].EventID).NextAttemptAt, "card-f's head was delivered a moment ago: not parked")
		n, err = b.store.ParkBlocked(b.ctx, t0.Add(ports.ParkUnconsumedAfter+time.Second), until, 100)
		require.NoError(t, err)
		require.Equal(t, 1, n, "a head delivered and unconsumed for longer is stuck too")
		requireTime(t, until, b.get(flight[1].EventID).NextAttemptAt, "parked until")

		res, err := b.store.Replay(b.ctx, ports.ReplayParams{EventIDs: []string{a[0].EventID}, Request: replayReq, Now: t0.Add(time.Minute)})
		require.NoError(t, err)
		require.Equal(t, []string{a[0].EventID}, res.Replayed)
		got = b.claim("relay-a", t0.Add(time.Minute), 100)
		require.Equal(t, []string{a[0].EventID}, eventIDs(got), "the parked events are not claimable")
		_, err = b.store.Complete(b.ctx, "relay-a", t0.Add(time.Minute), refs(got))
		require.NoError(t, err)
		require.NoError(t, b.store.RecordConsumed(b.ctx, []ports.Consumption{{EventID: a[0].EventID, Consumer: "c", At: t0, Ordered: true}}))
		requireTime(t, t0, b.get(a[1].EventID).NextAttemptAt, "rule: the predecessor's record brings the next one back to its due time")
		requireTime(t, until, b.get(a[2].EventID).NextAttemptAt, "only the next one")
		got = b.claim("relay-a", t0.Add(time.Minute), 100)
		require.Equal(t, []string{a[1].EventID}, eventIDs(got), "claimable at once")
		_, err = b.store.Complete(b.ctx, "relay-a", t0.Add(time.Minute), refs(got))
		require.NoError(t, err)

		// A record without the ordered flag (written another way) leaves
		// the parked event to its park time; it is then claimable.
		require.NoError(t, b.store.RecordConsumed(b.ctx, []ports.Consumption{{EventID: a[1].EventID, Consumer: "c", At: t0}}))
		require.Empty(t, b.claim("relay-a", t0.Add(time.Minute), 100))
		require.Equal(t, []string{a[2].EventID}, eventIDs(b.claim("relay-a", until, 100)))

		_, err = b.store.ParkBlocked(b.ctx, t0, until, 0)
		require.Error(t, err, "limit below 1")
	})

	// A delayed ordered event holds its successors until it is due: they
	// are parked with its not_before (so claims stop reading past them)
	// and counted as scheduled, not as a late backlog.
	t.Run("Ordered/ParkBlockedHoldsEventsBehindADelayedHeadUntilItIsDue", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		due := t0.Add(time.Hour)
		head, err := outbox.New(outbox.NewParams{
			EventID: uuid.NewString(), EventType: "card.expires", PayloadVersion: 1,
			AggregateType: "card", AggregateID: "card-d", ResourceType: "card", ResourceID: "card-d",
			RequestID: "req-card-d", Payload: map[string]any{"card_id": "card-d"}, Now: t0, Ordered: true, NotBefore: due,
		})
		require.NoError(t, err)
		require.NoError(t, b.store.Append(b.ctx, head))
		behind := b.appendOrdered("card-d", "card.renewed", "card.closed")
		other := b.appendOrdered("card-o", "card.activated")

		n, err := b.store.ParkBlocked(b.ctx, t0, t0.Add(30*time.Second), 100)
		require.NoError(t, err)
		require.Equal(t, 2, n, "rule: the events behind a delayed head are parked")
		for _, ev := range behind {
			got := b.get(ev.EventID)
			requireTime(t, due, got.NextAttemptAt, "rule: parked until the delayed head is due")
			requireTime(t, due, got.DueAt(), "rule: due no earlier than the delayed head")
		}
		st, err := b.store.Stats(b.ctx, t0.Add(time.Minute))
		require.NoError(t, err)
		require.EqualValues(t, 3, st.Scheduled, "rule: the head and the two behind it are scheduled, not late")
		require.Equal(t, time.Minute, st.OldestPendingAge, "only card-o's event, committed a minute ago, is late")
		require.Equal(t, []string{other[0].EventID}, eventIDs(b.claim("relay-a", t0, 100)))
		n, err = b.store.ParkBlocked(b.ctx, t0, t0.Add(30*time.Second), 100)
		require.NoError(t, err)
		require.Zero(t, n, "rule: parking again moves nothing")

		got := b.claim("relay-a", due, 100)
		require.Equal(t, []string{head.EventID}, eventIDs(got), "at its time the head goes first")
		_, err = b.store.Complete(b.ctx, "relay-a", due, refs(got))
		require.NoError(t, err)
		require.NoError(t, b.store.RecordConsumed(b.ctx, []ports.Consumption{{EventID: head.EventID, Consumer: "c", At: due, Ordered: true}}))
		require.Equal(t, []string{behind[0].EventID}, eventIDs(b.claim("relay-a", due, 100)), "then its successor, in order")
	})
}
