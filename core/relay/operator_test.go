package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
)

// claimAndMark claims the given rows for owner and completes (delivered)
// or fails them for good.
func (b *testBundle) claimAndMark(t *testing.T, owner string, deliver bool, n int) []outbox.Event {
	t.Helper()
	evs, err := b.store.Claim(t.Context(), ports.ClaimParams{Owner: owner, Limit: n, LeaseFor: time.Minute, Now: b.clock.Now()})
	require.NoError(t, err)
	require.Len(t, evs, n)
	refs := make([]ports.LeaseRef, n)
	items := make([]ports.FailItem, n)
	for i, ev := range evs {
		refs[i] = ports.LeaseRef{ID: ev.ID, Token: ev.Lease.Token}
		items[i] = ports.FailItem{Ref: refs[i], Decision: outbox.FailureDecision{Status: outbox.Failed, NextAttemptAt: b.clock.Now(), RetryCount: 1, Final: true, Code: "QUEUE_REFUSED", Message: "refused", Class: outbox.ClassPermanent}}
	}
	if deliver {
		_, err = b.store.Complete(t.Context(), owner, b.clock.Now(), refs)
	} else {
		_, err = b.store.Fail(t.Context(), owner, b.clock.Now(), items)
	}
	require.NoError(t, err)
	return evs
}

func (b *testBundle) audits(t *testing.T) []outbox.AuditPayload {
	t.Helper()
	evs, err := b.store.List(t.Context(), ports.OutboxFilter{EventType: outbox.AuditEventType})
	require.NoError(t, err)
	out := make([]outbox.AuditPayload, len(evs))
	for i, ev := range evs {
		require.NoError(t, json.Unmarshal(ev.Payload, &out[i]))
	}
	return out
}

func TestOperatorReplaysFailedEventsThroughTheRelay(t *testing.T) {
	t.Parallel()
	b := setup(t, relay.Config{})
	ids := b.seed(t, 1)
	b.claimAndMark(t, "relay-a/0", false, 1)
	op, err := relay.NewOperator(b.store, b.pub, b.pub, b.clock)
	require.NoError(t, err)

	out, err := op.Replay(t.Context(), relay.ReplayCommand{EventIDs: ids, Operator: "alice", Reason: "cause fixed", NewSuffixFunc: func() string { return "abc" }})
	require.NoError(t, err)
	require.Equal(t, ids, out.Replayed)
	require.Equal(t, "replay-20300101T000000Z-abc", out.BatchID, "a generated batch id names the time")
	require.Equal(t, outbox.Pending, b.get(t, ids[0]).Status, "the relay delivers it again")
	require.Empty(t, b.pub.Tasks(), "a relay-side replay makes no queue call")
	audits := b.audits(t)
	require.Len(t, audits, 1, "the replay is audited")
	require.Equal(t, "outbox.replay", audits[0].Action)
	require.Equal(t, "alice", audits[0].Actor)
	require.Equal(t, ids[0], audits[0].After)
}

// consumerFailed delivers one event, leaves its task retained in the queue
// and records that its consumer gave up.
func (b *testBundle) consumerFailed(t *testing.T) string {
	t.Helper()
	id := b.seed(t, 1)[0]
	b.claimAndMark(t, "relay-a/0", true, 1)
	for _, err := range b.pub.Publish(t.Context(), []outbox.Envelope{b.get(t, id).Envelope()}) {
		require.NoError(t, err)
	}
	ok, err := b.store.MarkConsumerFailed(t.Context(), ports.ConsumerFailure{EventID: id, Code: "ORDER_UNKNOWN", Message: "boom", At: b.clock.Now()})
	require.NoError(t, err)
	require.True(t, ok)
	return id
}

func TestOperatorReplaysConsumerFailuresThroughTheQueue(t *testing.T) {
	t.Parallel()
	b := setup(t, relay.Config{})
	id := b.consumerFailed(t)
	before := b.get(t, id)
	deleted := 0
	b.pub.ActiveFunc = func(string) bool { deleted++; return false }
	op, err := relay.NewOperator(b.store, b.pub, b.pub, b.clock)
	require.NoError(t, err)

	out, err := op.Replay(t.Context(), relay.ReplayCommand{EventIDs: []string{id}, Operator: "alice", Reason: "consumer fixed"})
	require.NoError(t, err)
	require.Equal(t, []string{id}, out.Replayed)
	require.Equal(t, 1, out.TasksDeleted, "the retained task is deleted so the consumer runs again")
	require.Equal(t, 1, deleted)
	require.Len(t, b.pub.Tasks(), 1, "the envelope is enqueued again")
	require.Equal(t, before, b.get(t, id), "a delivered row never changes, not even on replay")
	open, err := b.store.OpenConsumerFailures(t.Context(), ports.ConsumerFailureFilter{})
	require.NoError(t, err)
	require.Empty(t, open, "the failure is resolved once the event is enqueued again")
	audits := b.audits(t)
	require.Len(t, audits, 1)
	require.Equal(t, "outbox.replay_consumer", audits[0].Action, "the replay is audited before the queue is touched")
}

func TestOperatorConsumerReplayWithActiveTaskKeepsTheFailureOpen(t *testing.T) {
	t.Parallel()
	b := setup(t, relay.Config{})
	id := b.consumerFailed(t)
	b.pub.ActiveFunc = func(string) bool { return true }
	op, err := relay.NewOperator(b.store, b.pub, b.pub, b.clock)
	require.NoError(t, err)

	out, err := op.Replay(t.Context(), relay.ReplayCommand{EventIDs: []string{id}, Operator: "alice", Reason: "consumer fixed"})
	require.NoError(t, err)
	require.Empty(t, out.Replayed)
	require.Contains(t, out.Skipped[id], "stays open", "the queue error is reported, and a rerun finishes it")
	open, err := b.store.OpenConsumerFailures(t.Context(), ports.ConsumerFailureFilter{})
	require.NoError(t, err)
	require.Len(t, open, 1, "a failed requeue leaves the failure open")
	require.NotNil(t, open[0].ReplayRequestedAt, "and stamped with the attempt")
}

func TestOperatorReplayWithoutQueue(t *testing.T) {
	t.Parallel()
	b := setup(t, relay.Config{})
	ids := b.seed(t, 1)
	b.claimAndMark(t, "relay-a/0", false, 1)
	consumerID := b.consumerFailed(t)
	op, err := relay.NewOperator(b.store, nil, nil, b.clock)
	require.NoError(t, err)
	out, err := op.Replay(t.Context(), relay.ReplayCommand{EventIDs: append(ids, consumerID), Operator: "alice", Reason: "cause fixed", BatchID: "b-1"})
	require.NoError(t, err)
	require.True(t, out.TasksKept, "without a queue the outcome says so")
	require.Equal(t, ids, out.Replayed, "failed events are still replayed through the relay")
	require.Contains(t, out.Skipped[consumerID], "needs the queue")
	require.Equal(t, "b-1", out.BatchID)

	_, err = op.Replay(t.Context(), relay.ReplayCommand{Operator: "alice", Reason: "x"})
	var verr *outbox.ValidationError
	require.ErrorAs(t, err, &verr, "a replay without event ids is refused")
}

func TestOperatorReleaseLeases(t *testing.T) {
	t.Parallel()
	b := setup(t, relay.Config{})
	b.seed(t, 2)
	held, err := b.store.Claim(t.Context(), ports.ClaimParams{Owner: "relay-dead/0", Limit: 2, LeaseFor: time.Hour, Now: b.clock.Now()})
	require.NoError(t, err)
	op, err := relay.NewOperator(b.store, nil, nil, b.clock)
	require.NoError(t, err)

	_, err = op.ReleaseLeases(t.Context(), relay.ReleaseCommand{Owner: "relay-dead/0", Reason: "relay died"})
	var verr *outbox.ValidationError
	require.ErrorAs(t, err, &verr, "an operator is required")

	ids, err := op.ReleaseLeases(t.Context(), relay.ReleaseCommand{Owner: "relay-dead/0", Operator: "bob", Reason: "relay died"})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{held[0].EventID, held[1].EventID}, ids)
	audits := b.audits(t)
	require.Len(t, audits, 1)
	require.Equal(t, "outbox.release_leases", audits[0].Action)
	require.Equal(t, "relay-dead/0", audits[0].ResourceID)
}

func TestDeadLetter(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		prepare    func(t *testing.T, b *testBundle) string // returns the task id
		wantMarked int
		wantLog    string
	}{
		{"Delivered", func(t *testing.T, b *testBundle) string {
			b.seed(t, 1)
			return b.claimAndMark(t, "relay-a/0", true, 1)[0].EventID
		}, 1, "outbox event failed in its consumer; replay after fixing the cause"},
		// Regression: the relay's Complete comes late (a slow batch)
		// or never (its lease expired and the recovery put the row back to
		// pending): the consumer's final failure is recorded all the same.
		{"RelayMarksLate", func(t *testing.T, b *testBundle) string {
			b.seed(t, 1)
			evs, err := b.store.Claim(t.Context(), ports.ClaimParams{Owner: "relay-a/0", Limit: 1, LeaseFor: time.Minute, Now: b.clock.Now()})
			require.NoError(t, err)
			return evs[0].EventID
		}, 1, "outbox event failed in its consumer; replay after fixing the cause"},
		{"CompleteLostBackToPending", func(t *testing.T, b *testBundle) string {
			b.seed(t, 1)
			evs, err := b.store.Claim(t.Context(), ports.ClaimParams{Owner: "relay-a/0", Limit: 1, LeaseFor: time.Second, Now: b.clock.Now()})
			require.NoError(t, err)
			_, err = b.store.RecoverExpired(t.Context(), ports.RecoverParams{Now: b.clock.Now().Add(time.Minute), Limit: 10})
			require.NoError(t, err)
			require.Equal(t, outbox.Pending, b.get(t, evs[0].EventID).Status)
			return evs[0].EventID
		}, 1, "outbox event failed in its consumer; replay after fixing the cause"},
		{"PlainTask", func(*testing.T, *testBundle) string { return "task-42" }, 0, "no outbox event has its id"},
		{"StoreDown", func(t *testing.T, b *testBundle) string {
			b.seed(t, 1)
			id := b.claimAndMark(t, "relay-a/0", true, 1)[0].EventID
			b.store.SetDown(true)
			return id
		}, 0, "could not be marked failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, relay.Config{})
			id := tt.prepare(t, b)
			var (
				mu     sync.Mutex
				logs   bytes.Buffer
				marked []string
			)
			d, err := relay.NewDeadLetter(b.store, b.clock, relay.DeadLetterConfig{
				Timeout:    2 * time.Second,
				MarkedFunc: func(typ string) { mu.Lock(); marked = append(marked, typ); mu.Unlock() },
			}, slog.New(slog.NewJSONHandler(&logs, nil)))
			require.NoError(t, err)
			// A cancelled task context must not stop the mark.
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			d.Record(ctx, id, "test.happened", errors.New("ORDER_UNKNOWN: token=abc.def.ghi"))

			require.Len(t, marked, tt.wantMarked, "case %s", tt.name)
			require.Contains(t, logs.String(), tt.wantLog, "case %s", tt.name)
			if tt.wantMarked > 0 {
				open, err := b.store.OpenConsumerFailures(t.Context(), ports.ConsumerFailureFilter{})
				require.NoError(t, err)
				require.Len(t, open, 1)
				require.Equal(t, outbox.ConsumerFailedCode, open[0].Code)
				require.Contains(t, open[0].Message, "ORDER_UNKNOWN")
				require.NotContains(t, open[0].Message, "abc.def.ghi", "the stored message is redacted")
			}
		})
	}
}

func (b *testBundle) get(t *testing.T, eventID string) outbox.Event {
	t.Helper()
	ev, err := b.store.Get(t.Context(), eventID)
	require.NoError(t, err)
	return ev
}

// REGRESSION: a database blink while marking a published batch
// left its rows Delivering until the whole lease expired (30 s by default),
// then published them again. The mark is retried while the lease holds.
func TestMarkIsRetriedWhileTheLeaseHolds(t *testing.T) {
	t.Parallel()
	b := setup(t, relay.Config{LeaseFor: time.Minute})
	ids := b.seed(t, 2)
	var once sync.Once
	b.pub.FailFunc = func(outbox.Envelope) error {
		once.Do(func() {
			b.store.SetDown(true) // the store blinks right after the publish
			time.AfterFunc(200*time.Millisecond, func() { b.store.SetDown(false) })
		})
		return nil
	}
	n, err := b.relay.RunOnce(t.Context(), b.relay.Owner(0))
	require.NoError(t, err, "the retried mark succeeds once the store is back")
	require.Equal(t, 2, n)
	for _, id := range ids {
		require.Equal(t, outbox.Delivered, b.get(t, id).Status, "marked delivered without waiting for the lease to expire")
		require.Equal(t, 1, b.pub.Attempts(id), "published once")
	}
}

// Regression (issue 43 item 2): a delivered ordered blocker that no
// consumer recorded and no failure names (its task lost after a replay,
// or a consumer that never records) blocks its aggregate; the replay
// refused it ("status delivered"), so no operator tool could unblock it.
// It is now replayed through the queue like a consumer failure.
func TestOperatorReplaysAnUnconsumedOrderedBlocker(t *testing.T) {
	t.Parallel()
	b := setup(t, relay.Config{})
	var ids []string
	for i := range 2 {
		id := uuid.NewString()
		ev, err := outbox.New(outbox.NewParams{EventID: id, EventType: "card.changed", PayloadVersion: 1,
			AggregateType: "card", AggregateID: "c-1", ResourceType: "card", ResourceID: "c-1",
			RequestID: "req-card", Payload: map[string]int{"n": i}, Now: b.clock.Now(), Ordered: true})
		require.NoError(t, err)
		require.NoError(t, b.store.Append(t.Context(), ev))
		ids = append(ids, id)
	}
	b.claimAndMark(t, "relay-a/0", true, 1) // the head is delivered; its task is gone
	b.clock.Advance(ports.StuckUnconsumedAfter + time.Minute)
	stuck, err := b.store.StuckAggregates(t.Context(), b.clock.Now(), 10)
	require.NoError(t, err)
	require.Len(t, stuck, 1)
	require.Equal(t, ports.StuckUnconsumed, stuck[0].Reason)
	b.pub.ActiveFunc = func(string) bool { return false }
	op, err := relay.NewOperator(b.store, b.pub, b.pub, b.clock)
	require.NoError(t, err)

	out, err := op.Replay(t.Context(), relay.ReplayCommand{EventIDs: ids[:1], Operator: "alice", Reason: "its task was lost"})
	require.NoError(t, err)
	require.Equal(t, ids[:1], out.Replayed, "rule: the blocker is replayed (skipped: %v)", out.Skipped)
	require.Len(t, b.pub.Tasks(), 1, "rule: through the queue: the envelope is enqueued again")
	open, err := b.store.OpenConsumerFailures(t.Context(), ports.ConsumerFailureFilter{})
	require.NoError(t, err)
	require.Empty(t, open, "the failure recorded for it is resolved once it is enqueued again")
}

// Regression (issue 43): the blocker replay looked for its events in the
// first 500 stuck aggregates only, so the blocker of a 501st was refused.
func TestOperatorReplaysABlockerPastTheFirst500Stuck(t *testing.T) {
	t.Parallel()
	b := setup(t, relay.Config{BatchSize: 1000})
	const n = 501
	var heads []string
	for i := range n {
		heads = append(heads, uuid.NewString())
		for j, id := range []string{heads[i], uuid.NewString()} { // a head and the event behind it
			ev, err := outbox.New(outbox.NewParams{EventID: id, EventType: "card.changed", PayloadVersion: 1,
				AggregateType: "card", AggregateID: fmt.Sprintf("c-%d", i), ResourceType: "card", ResourceID: "c",
				RequestID: "req-card", Payload: map[string]int{"n": j}, Now: b.clock.Now(), Ordered: true})
			require.NoError(t, err)
			require.NoError(t, b.store.Append(t.Context(), ev))
		}
	}
	b.claimAndMark(t, "relay-a/0", true, n) // every head delivered; their tasks are gone
	b.clock.Advance(ports.StuckUnconsumedAfter + time.Minute)
	stuck, err := b.store.StuckAggregates(t.Context(), b.clock.Now(), 500)
	require.NoError(t, err)
	require.Len(t, stuck, 500)
	listed := map[string]bool{}
	for _, a := range stuck {
		listed[a.Blocker.EventID] = true
	}
	var last string // the blocker the first 500 do not list
	for _, id := range heads {
		if !listed[id] {
			last = id
		}
	}
	require.NotEmpty(t, last)
	b.pub.ActiveFunc = func(string) bool { return false }
	op, err := relay.NewOperator(b.store, b.pub, b.pub, b.clock)
	require.NoError(t, err)

	out, err := op.Replay(t.Context(), relay.ReplayCommand{EventIDs: []string{last}, Operator: "alice", Reason: "its task was lost"})
	require.NoError(t, err)
	require.Equal(t, []string{last}, out.Replayed, "the 501st stuck aggregate's blocker is replayed (skipped: %v)", out.Skipped)
}
