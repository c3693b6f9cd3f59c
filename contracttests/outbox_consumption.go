package contracttests

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// consume records each event as consumed by "test-consumer" at t0.
func (b *outboxBundle) consume(evs ...outbox.Event) {
	b.t.Helper()
	cs := make([]ports.Consumption, len(evs))
	for i, ev := range evs {
		cs[i] = ports.Consumption{EventID: ev.EventID, Consumer: "test-consumer", At: t0}
	}
	require.NoError(b.t, b.store.RecordConsumed(b.ctx, cs))
}

// deliveredAt seeds, claims and completes one event at at.
func (b *outboxBundle) deliveredAt(at time.Time) outbox.Event {
	b.t.Helper()
	ev := b.claimOne("relay-c")
	lost, err := b.store.Complete(b.ctx, "relay-c", at, []ports.LeaseRef{ref(ev)})
	require.NoError(b.t, err)
	require.Empty(b.t, lost)
	return b.get(ev.EventID)
}

func runOutboxConsumption(t *testing.T, newStore func(t *testing.T) ports.OutboxStore) {
	t.Run("Consumption/UnconsumedExcludesRecordedFailedAndUndelivered", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		waiting := b.deliveredAt(t0)
		consumed := b.deliveredAt(t0)
		b.consume(consumed)
		b.consume(consumed) // rule: recording twice keeps one record, no error
		failed := b.deliveredAt(t0)
		ok, err := b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: failed.EventID, Code: "X", Message: "boom", At: t0})
		require.NoError(t, err)
		require.True(t, ok)
		pending := b.seed(t0, 1, "order.created")[0]

		got, err := b.store.DeliveredUnconsumed(b.ctx, ports.DeliveredCursor{}, t0.Add(time.Hour), 100)
		require.NoError(t, err)
		require.Equal(t, []string{waiting.EventID}, eventIDs(got),
			"rule: only a delivered event with neither a consumption record nor an open consumer failure awaits its consumer")
		got, err = b.store.Unconsumed(b.ctx, []string{waiting.EventID, consumed.EventID, failed.EventID, pending.EventID})
		require.NoError(t, err)
		require.Equal(t, []string{waiting.EventID}, eventIDs(got), "Unconsumed applies the same rule to named events")
		require.Equal(t, waiting.Payload, got[0].Payload, "as full events, ready to publish again")

		b.consume(waiting)
		got, err = b.store.Unconsumed(b.ctx, []string{waiting.EventID})
		require.NoError(t, err)
		require.Empty(t, got, "recorded: no longer awaited")
	})

	t.Run("Consumption/DeliveredUnconsumedPagesByDeliveryAndStopsAtUntil", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		var want []string
		for i := range 5 {
			want = append(want, b.deliveredAt(t0.Add(time.Duration(i)*time.Second)).EventID)
		}
		late := b.deliveredAt(t0.Add(30 * time.Second))
		var got []string
		cur := ports.DeliveredCursor{}
		for range 10 {
			page, err := b.store.DeliveredUnconsumed(b.ctx, cur, t0.Add(4*time.Second), 2)
			require.NoError(t, err)
			got = append(got, eventIDs(page)...)
			if len(page) < 2 {
				break
			}
			last := page[len(page)-1]
			cur = ports.DeliveredCursor{DeliveredAt: *last.DeliveredAt, ID: last.ID}
		}
		require.Equal(t, want, got, "pages in (delivered_at, id) order, until inclusive, each event once")
		page, err := b.store.DeliveredUnconsumed(b.ctx, ports.DeliveredCursor{DeliveredAt: t0.Add(4 * time.Second), ID: math.MaxInt64}, t0.Add(2*time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, []string{late.EventID}, eventIDs(page), "a cursor at until reads only what was delivered after it")
	})

	t.Run("Consumption/ReplayedUnconsumedReadsResolvedReplays", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		fail := func(ev outbox.Event) {
			ok, err := b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: ev.EventID, Code: "X", Message: "boom", At: t0})
			require.NoError(t, err)
			require.True(t, ok)
		}
		replay := func(at time.Time, evs ...outbox.Event) {
			ids := eventIDs(evs)
			stamped, err := b.store.RequestConsumerReplay(b.ctx, ports.ConsumerReplayParams{EventIDs: ids, BatchID: "b-" + at.Format("150405"), Now: at})
			require.NoError(t, err)
			require.ElementsMatch(t, ids, stamped)
			n, err := b.store.ResolveConsumerFailures(b.ctx, "b-"+at.Format("150405"), ids, at)
			require.NoError(t, err)
			require.Equal(t, len(ids), n)
		}
		replayed, consumedAfter, stillFailed, early := b.deliveredAt(t0), b.deliveredAt(t0), b.deliveredAt(t0), b.deliveredAt(t0)
		for _, ev := range []outbox.Event{replayed, consumedAfter, stillFailed, early} {
			fail(ev)
		}
		replay(t0.Add(time.Minute), early)
		replay(t0.Add(10*time.Minute), replayed, consumedAfter)
		b.consume(consumedAfter)
		fail(early) // failed again after its replay: settled

		got, err := b.store.ReplayedUnconsumed(b.ctx, t0.Add(5*time.Minute), 100)
		require.NoError(t, err)
		require.Equal(t, []string{replayed.EventID}, eventIDs(got),
			"rule: a replay resolved at or after since, still delivered with no record and no open failure")
		require.Equal(t, replayed.Payload, got[0].Payload, "as a full event, ready to publish again")
		got, err = b.store.ReplayedUnconsumed(b.ctx, t0.Add(10*time.Minute), 100)
		require.NoError(t, err)
		require.Len(t, got, 1, "since is inclusive")
		got, err = b.store.ReplayedUnconsumed(b.ctx, t0.Add(11*time.Minute), 100)
		require.NoError(t, err)
		require.Empty(t, got, "nothing replayed since then")
		for _, limit := range []int{0, 1001} {
			_, err = b.store.ReplayedUnconsumed(b.ctx, t0, limit)
			require.Error(t, err, "limit %d", limit)
		}
	})

	t.Run("Consumption/RefusesBadInput", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.deliveredAt(t0)
		require.Error(t, b.store.RecordConsumed(b.ctx, []ports.Consumption{{EventID: "not-a-uuid", Consumer: "c", At: t0}}))
		require.Error(t, b.store.RecordConsumed(b.ctx, []ports.Consumption{{EventID: ev.EventID, Consumer: " ", At: t0}}))
		_, err := b.store.DeliveredUnconsumed(b.ctx, ports.DeliveredCursor{}, t0, 0)
		require.Error(t, err)
		_, err = b.store.Unconsumed(b.ctx, []string{"nope"})
		require.Error(t, err)
		got, err := b.store.Unconsumed(b.ctx, []string{ev.EventID})
		require.NoError(t, err)
		require.Len(t, got, 1, "a refused record wrote nothing")
	})

	t.Run("PurgeDelivered/KeepsUnconsumedEvents", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		unconsumed := b.deliveredAt(t0)
		consumed := b.deliveredAt(t0)
		b.consume(consumed)
		n, err := b.store.PurgeDelivered(b.ctx, t0.Add(24*time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, 1, n, "rule: retention follows consumption; an event no consumer recorded may still need publishing again")
		b.get(unconsumed.EventID)
		_, err = b.store.Get(b.ctx, consumed.EventID)
		require.ErrorIs(t, err, ports.ErrNotFound)
		b.consume(unconsumed)
		n, err = b.store.PurgeDelivered(b.ctx, t0.Add(24*time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, 1, n, "once recorded it ages out like any other")
	})
}
