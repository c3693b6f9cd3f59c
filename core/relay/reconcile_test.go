package relay_test

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
)

// reconcileWorld is an outbox and a queue, both in memory (each proven by
// its contract suite), with n events delivered at t0.
type reconcileWorld struct {
	store *memory.OutboxStore
	queue *memory.Publisher
	ids   []string
	now   time.Time
	rec   *relay.Reconciler
	// inventory, when set before the reconciler is built, wraps the queue.
	inventory func(w *reconcileWorld) ports.QueueInventory
}

func newReconcileWorld(t *testing.T, n int, cfg relay.ReconcileConfig, inventory ...func(w *reconcileWorld) ports.QueueInventory) *reconcileWorld {
	t.Helper()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	w := &reconcileWorld{store: memory.NewOutboxStore(), queue: memory.NewPublisher(), now: t0}
	if len(inventory) > 0 {
		w.inventory = inventory[0]
	}
	for range n {
		ev, err := outbox.New(outbox.NewParams{EventID: uuid.NewString(), EventType: "order.created", PayloadVersion: 1,
			AggregateType: "order", AggregateID: "o", ResourceType: "order", ResourceID: "o",
			RequestID: "req", CorrelationID: "corr", Payload: map[string]any{"n": 1}, Now: t0})
		require.NoError(t, err)
		require.NoError(t, w.store.Append(t.Context(), ev))
		w.ids = append(w.ids, ev.EventID)
	}
	claimed, err := w.store.Claim(t.Context(), ports.ClaimParams{Owner: "r", Limit: n, LeaseFor: time.Minute, Now: t0})
	require.NoError(t, err)
	var refs []ports.LeaseRef
	var envs []outbox.Envelope
	for _, ev := range claimed {
		refs = append(refs, ports.LeaseRef{ID: ev.ID, Token: ev.Lease.Token})
		envs = append(envs, ev.Envelope())
	}
	for _, err := range w.queue.Publish(t.Context(), envs) {
		require.NoError(t, err)
	}
	lost, err := w.store.Complete(t.Context(), "r", t0, refs)
	require.NoError(t, err)
	require.Empty(t, lost)
	w.now = t0.Add(time.Hour)
	cfg.EvidenceLag = cmp.Or(cfg.EvidenceLag, time.Millisecond)
	var q ports.QueueInventory = w.queue
	if w.inventory != nil {
		q = w.inventory(w)
	}
	w.rec, err = relay.NewReconciler(relay.ReconcileStores{Outbox: w.store, Failures: w.store, Recorder: w.store, Queue: q, Pub: w.queue},
		ports.ClockFunc(func() time.Time { return w.now }), cfg, nil, nil)
	require.NoError(t, err)
	return w
}

func (w *reconcileWorld) consume(t *testing.T, ids ...string) {
	t.Helper()
	var cs []ports.Consumption
	for _, id := range ids {
		cs = append(cs, ports.Consumption{EventID: id, Consumer: "test", At: w.now})
	}
	require.NoError(t, w.store.RecordConsumed(t.Context(), cs))
}

// A task the queue lost is published again under its event_id; one still
// held (slow, retrying) is not; a consumed one is dropped.
func TestReconcileRepublishesOnlyLostTasks(t *testing.T) {
	t.Parallel()
	w := newReconcileWorld(t, 6, relay.ReconcileConfig{})
	consumed, held, lost := w.ids[:2], w.ids[2:4], w.ids[4:]
	w.consume(t, consumed...)
	w.queue.Lose(consumed...) // consumed and not retained: gone, rightly
	w.queue.Lose(lost...)     // acknowledged, then forgotten

	res := w.rec.Pass(t.Context(), "restart")
	require.NoError(t, res.Err)
	require.Equal(t, 2, res.Republished, "only the lost tasks are published again")
	require.Equal(t, 4, res.Watched, "the held and the lost wait for their consumer")
	require.Equal(t, time.Hour, res.OldestAge)
	for _, id := range lost {
		require.Equal(t, 2, w.queue.Attempts(id), "lost %s published again", id)
	}
	for _, id := range slices.Concat(held, consumed) {
		require.Equal(t, 1, w.queue.Attempts(id), "%s never published twice", id)
	}

	w.consume(t, held...)
	w.consume(t, lost...)
	res = w.rec.Pass(t.Context(), relay.TriggerPeriodic)
	require.NoError(t, res.Err)
	require.Zero(t, res.Republished)
	require.Zero(t, res.Watched, "consumed events are no longer followed")
}

// An event archived by the queue without a consumer failure record (its
// worker died on every attempt) is recorded as a consumer failure; an
// event no consumer ever records is published at most MaxRepublish times.
func TestReconcileAbandonedAndGiveUp(t *testing.T) {
	t.Parallel()
	w := newReconcileWorld(t, 2, relay.ReconcileConfig{MaxRepublish: 2})
	abandoned, unconsumable := w.ids[0], w.ids[1]
	w.queue.Archive(abandoned)

	republished := 0
	for range 4 {
		w.queue.Lose(unconsumable) // consumed by something that records nothing
		res := w.rec.Pass(t.Context(), relay.TriggerPeriodic)
		require.NoError(t, res.Err)
		republished += res.Republished
		w.now = w.now.Add(time.Hour)
	}
	require.Equal(t, 2, republished, "published again at most MaxRepublish times")
	open, err := w.store.OpenConsumerFailures(t.Context(), ports.ConsumerFailureFilter{})
	require.NoError(t, err)
	require.Len(t, open, 1)
	require.Equal(t, abandoned, open[0].EventID)
	require.Equal(t, relay.CodeConsumerAbandoned, open[0].Code)
}

// An ordered event no consumer ever records holds its aggregate: when the
// reconciler gives up on it, it records a consumer failure, so the
// aggregate shows as stuck and the event can be replayed. (An unordered
// one is only logged: TestReconcileAbandonedAndGiveUp.)
func TestReconcileGiveUpOnAnOrderedEventRecordsAFailure(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	store, q, now := memory.NewOutboxStore(), memory.NewPublisher(), t0
	var ids []string
	for range 2 {
		ev, err := outbox.New(outbox.NewParams{EventID: uuid.NewString(), EventType: "card.changed", PayloadVersion: 1,
			AggregateType: "card", AggregateID: "c-1", ResourceType: "card", ResourceID: "c-1",
			RequestID: "req", Payload: map[string]any{"n": 1}, Now: t0, Ordered: true})
		require.NoError(t, err)
		require.NoError(t, store.Append(ctx, ev))
		ids = append(ids, ev.EventID)
	}
	claimed, err := store.Claim(ctx, ports.ClaimParams{Owner: "r", Limit: 10, LeaseFor: time.Minute, Now: t0})
	require.NoError(t, err)
	require.Len(t, claimed, 1, "the first of the aggregate")
	for _, err := range q.Publish(ctx, []outbox.Envelope{claimed[0].Envelope()}) {
		require.NoError(t, err)
	}
	_, err = store.Complete(ctx, "r", t0, []ports.LeaseRef{{ID: claimed[0].ID, Token: claimed[0].Lease.Token}})
	require.NoError(t, err)
	now = t0.Add(time.Hour)
	rec, err := relay.NewReconciler(relay.ReconcileStores{Outbox: store, Failures: store, Recorder: store, Queue: q, Pub: q},
		ports.ClockFunc(func() time.Time { return now }), relay.ReconcileConfig{MaxRepublish: 2, EvidenceLag: time.Millisecond}, nil, nil)
	require.NoError(t, err)
	for range 4 {
		q.Lose(ids[0])
		require.NoError(t, rec.Pass(ctx, relay.TriggerPeriodic).Err)
		now = now.Add(time.Hour)
	}
	open, err := store.OpenConsumerFailures(ctx, ports.ConsumerFailureFilter{})
	require.NoError(t, err)
	require.Len(t, open, 1)
	require.Equal(t, ids[0], open[0].EventID)
	require.Equal(t, relay.CodeNeverConsumed, open[0].Code)
	stuck, err := store.StuckAggregates(ctx, now, 10)
	require.NoError(t, err)
	require.Len(t, stuck, 1)
	require.Equal(t, ports.StuckConsumerFailed, stuck[0].Reason)
}

// The queue down: the pass fails, changes nothing, and the next one after
// it is back does the work.
func TestReconcileQueueDown(t *testing.T) {
	t.Parallel()
	w := newReconcileWorld(t, 3, relay.ReconcileConfig{})
	w.queue.Lose()
	w.queue.SetDown(true)
	res := w.rec.Pass(t.Context(), relay.TriggerPeriodic)
	require.ErrorIs(t, res.Err, ports.ErrUnavailable)
	require.Zero(t, res.Republished)
	w.queue.SetDown(false)
	res = w.rec.Pass(t.Context(), relay.TriggerPeriodic)
	require.NoError(t, res.Err)
	require.Equal(t, 3, res.Republished)
}

// The scan stays Grace behind now, except in a pass after a signal, and
// reads each delivery once however many passes run.
func TestReconcileGraceAndSignal(t *testing.T) {
	t.Parallel()
	w := newReconcileWorld(t, 2, relay.ReconcileConfig{Grace: 2 * time.Hour})
	w.queue.Lose()
	res := w.rec.Pass(t.Context(), relay.TriggerPeriodic)
	require.NoError(t, res.Err)
	require.Zero(t, res.Watched, "delivered an hour ago, inside the 2 h grace: not yet followed")
	res = w.rec.Pass(t.Context(), "canary_missing")
	require.NoError(t, res.Err)
	require.Equal(t, 2, res.Republished, "a signal's pass reads inside the grace too")
}

// lateEvidence is a queue whose consumer finishes every task right as the
// queue is read: the task is gone and its consumption record arrives a
// moment later (the worker writes records in the background).
type lateEvidence struct {
	w *reconcileWorld
	t *testing.T
}

func (l lateEvidence) TaskStates(ctx context.Context, ids []string) ([]ports.QueueState, error) {
	l.w.queue.Lose(ids...)
	states, err := l.w.queue.TaskStates(ctx, ids)
	l.w.consume(l.t, ids...)
	return states, err
}

// A task that finished while the pass read the queue is not lost: its
// record arrives within the evidence lag, and it is not published again.
func TestReconcileWaitsForLateEvidence(t *testing.T) {
	t.Parallel()
	w := newReconcileWorld(t, 3, relay.ReconcileConfig{}, func(w *reconcileWorld) ports.QueueInventory { return lateEvidence{w, t} })
	res := w.rec.Pass(t.Context(), relay.TriggerPeriodic)
	require.NoError(t, res.Err)
	require.Zero(t, res.Republished, "rule: a finished task is never published again")
	require.Zero(t, res.Watched)
	for _, id := range w.ids {
		require.Equal(t, 1, w.queue.Attempts(id))
	}
}

// REGRESSION (issue 43, item 2): a consumer replay publishes an old event
// again (its delivered_at is long behind the cursor); when the queue then
// loses that task, the reconciler must still see it: replayed events
// rejoin its watch.
func TestReconcileWatchesReplayedEventsAgain(t *testing.T) {
	t.Parallel()
	w := newReconcileWorld(t, 1, relay.ReconcileConfig{})
	id, ctx := w.ids[0], t.Context()
	require.NoError(t, w.rec.Pass(ctx, relay.TriggerPeriodic).Err)

	// The consumer gives up: the event is settled (an open failure).
	_, err := w.store.MarkConsumerFailed(ctx, ports.ConsumerFailure{EventID: id, Code: "BOOM", Message: "boom", At: w.now})
	require.NoError(t, err)
	res := w.rec.Pass(ctx, relay.TriggerPeriodic)
	require.NoError(t, res.Err)
	require.Zero(t, res.Watched, "an event with an open failure is settled")

	// An operator replays it (as relay.Operator does), then the queue
	// loses the new task before a consumer runs it.
	w.now = w.now.Add(time.Minute)
	stamped, err := w.store.RequestConsumerReplay(ctx, ports.ConsumerReplayParams{EventIDs: []string{id}, BatchID: "b1", Now: w.now})
	require.NoError(t, err)
	require.Equal(t, []string{id}, stamped)
	w.queue.Lose(id)
	for _, err := range w.queue.Publish(ctx, []outbox.Envelope{{EventID: id, EventType: "order.created", PayloadVersion: 1, Payload: []byte(`{"n":1}`)}}) {
		require.NoError(t, err)
	}
	n, err := w.store.ResolveConsumerFailures(ctx, "b1", []string{id}, w.now)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	w.queue.Lose(id)
	before := w.queue.Attempts(id)

	w.now = w.now.Add(10 * time.Minute)
	res = w.rec.Pass(ctx, relay.TriggerPeriodic)
	require.NoError(t, res.Err)
	require.Equal(t, 1, res.Republished, "the replayed event whose task was lost is published again")
	require.Equal(t, before+1, w.queue.Attempts(id))
	require.Equal(t, 1, res.Watched, "and followed until a consumer records it")
}

// Regression (an eviction e2e at load 35): a storm of loss signals ran a
// pass every few hundred milliseconds, each publishing again what the
// storm had just evicted, and spent MaxRepublish within seconds; the
// event was given up and never applied. Republishes of one event are
// spaced (5 s, doubling), so a storm's passes do not spend the budget.
func TestReconcileStormDoesNotSpendTheRepublishBudget(t *testing.T) {
	t.Parallel()
	w := newReconcileWorld(t, 1, relay.ReconcileConfig{MaxRepublish: 2})
	republished := 0
	for range 10 { // ten passes within a second, the task lost each time
		w.queue.Lose(w.ids[0])
		res := w.rec.Pass(t.Context(), "eviction")
		require.NoError(t, res.Err)
		republished += res.Republished
		w.now = w.now.Add(100 * time.Millisecond)
	}
	require.Equal(t, 1, republished, "rule: one republish per spacing, however many signals")
	w.now = w.now.Add(time.Minute)
	w.queue.Lose(w.ids[0])
	res := w.rec.Pass(t.Context(), "eviction")
	require.NoError(t, res.Err)
	require.Equal(t, 1, res.Republished, "once the spacing passed it is published again")
	require.Equal(t, 1, res.Watched, "and still followed: the budget was not spent by the storm")
}
