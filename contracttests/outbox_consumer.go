package contracttests

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// runOutboxConsumerFailure checks ports.ConsumerFailureStore and the audited
// forms of Replay and ReleaseLeases: the operator use cases in core/relay
// rely on these sentences.

func runOutboxConsumerFailure(t *testing.T, newStore func(t *testing.T) ports.OutboxStore) {
	t.Run("MarkConsumerFailed/RecordsAnOpenFailureAndLeavesTheEventDelivered", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.delivered("relay-a")
		at := t0.Add(time.Minute)
		ok, err := b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: ev.EventID, Code: "ORDER_UNKNOWN", Message: "order o-1 not found", At: at})
		require.NoError(t, err)
		require.True(t, ok, "rule: a Delivered event's failure is recorded")
		require.Equal(t, ev, b.get(ev.EventID), "rule: a delivered row never changes again, not even for a consumer failure")
		open := b.openFailures()
		require.Len(t, open, 1)
		require.Equal(t, ev.EventID, open[0].EventID)
		require.Equal(t, ev.EventType, open[0].EventType)
		require.Equal(t, "ORDER_UNKNOWN", open[0].Code, "a valid code is kept")
		require.Equal(t, "order o-1 not found", open[0].Message)
		requireTime(t, at, open[0].FailedAt, "failed_at")

		ok, err = b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: ev.EventID, Code: "OTHER", Message: "again", At: at.Add(time.Minute)})
		require.NoError(t, err)
		require.False(t, ok, "rule: an event has at most one open failure")
		require.Len(t, b.openFailures(), 1, "rule: a second mark changes nothing")
	})

	t.Run("ConsumerFailure/ReplayStampsThenResolves", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.delivered("relay-a")
		other := b.delivered("relay-a")
		for _, id := range []string{ev.EventID, other.EventID} {
			ok, err := b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: id, Code: "X", Message: "boom", At: t0})
			require.NoError(t, err)
			require.True(t, ok)
		}
		stamped, err := b.store.RequestConsumerReplay(b.ctx, ports.ConsumerReplayParams{
			EventIDs: []string{ev.EventID, "6f1c1d2e-8a4b-4c3d-9e8f-0a1b2c3d4e5f"}, BatchID: "batch-c", Now: t0.Add(time.Hour),
			Audit: auditRecord("outbox.replay_consumer", "outbox_batch", "batch-c"),
		})
		require.NoError(t, err)
		require.Equal(t, []string{ev.EventID}, stamped, "rule: only open failures are stamped")
		open := b.openFailures()
		require.Len(t, open, 2, "rule: a stamped failure stays open until resolved")
		for _, f := range open {
			if f.EventID == ev.EventID {
				require.Equal(t, "batch-c", f.ReplayBatchID)
				require.NotNil(t, f.ReplayRequestedAt)
			}
		}
		audits := b.audits()
		require.Len(t, audits, 1, "rule: the audit record commits with the stamp")
		require.Equal(t, ev.EventID, audits[0].After)

		n, err := b.store.ResolveConsumerFailures(b.ctx, "batch-c", []string{ev.EventID, other.EventID}, t0.Add(2*time.Hour))
		require.NoError(t, err)
		require.Equal(t, 1, n)
		open = b.openFailures()
		require.Len(t, open, 1)
		require.Equal(t, other.EventID, open[0].EventID, "rule: only failures stamped with the batch are resolved")
		require.Equal(t, ev, b.get(ev.EventID), "rule: the delivered row never changed")

		ok, err := b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: ev.EventID, Code: "X", Message: "again", At: t0.Add(3 * time.Hour)})
		require.NoError(t, err)
		require.True(t, ok, "rule: after a resolved failure the consumer may fail again")
	})

	t.Run("ConsumerFailure/FailingAgainDuringItsReplayKeepsItOpen", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.delivered("relay-a")
		ok, err := b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: ev.EventID, Code: "X", Message: "boom", At: t0})
		require.NoError(t, err)
		require.True(t, ok)
		_, err = b.store.RequestConsumerReplay(b.ctx, ports.ConsumerReplayParams{EventIDs: []string{ev.EventID}, BatchID: "batch-r", Now: t0.Add(time.Minute)})
		require.NoError(t, err)
		// The re-enqueued event fails again before the replay resolves it.
		ok, err = b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: ev.EventID, Code: "AGAIN", Message: "still broken", At: t0.Add(2 * time.Minute)})
		require.NoError(t, err)
		require.True(t, ok, "rule: a stamped failure is failed again")
		n, err := b.store.ResolveConsumerFailures(b.ctx, "batch-r", []string{ev.EventID}, t0.Add(3*time.Minute))
		require.NoError(t, err)
		require.Zero(t, n, "rule: the replay cannot resolve a failure recorded again since its stamp")
		open := b.openFailures()
		require.Len(t, open, 1, "the new failure stays open")
		require.Equal(t, "AGAIN", open[0].Code)
		require.Nil(t, open[0].ReplayRequestedAt, "and loses the stamp")
	})

	t.Run("PurgeDelivered/KeepsEventsWithAnOpenConsumerFailure", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		kept := b.delivered("relay-a")
		ok, err := b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: kept.EventID, Code: "X", Message: "boom", At: t0})
		require.NoError(t, err)
		require.True(t, ok)
		gone := b.delivered("relay-a")
		b.consume(gone)
		n, err := b.store.PurgeDelivered(b.ctx, t0.Add(24*time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, 1, n, "rule: retention never deletes the event of an unresolved consumer failure")
		require.Equal(t, kept, b.get(kept.EventID))
		_, err = b.store.Get(b.ctx, gone.EventID)
		require.ErrorIs(t, err, ports.ErrNotFound)
		_, err = b.store.RequestConsumerReplay(b.ctx, ports.ConsumerReplayParams{EventIDs: []string{kept.EventID}, BatchID: "batch-p", Now: t0})
		require.NoError(t, err)
		_, err = b.store.ResolveConsumerFailures(b.ctx, "batch-p", []string{kept.EventID}, t0.Add(time.Hour))
		require.NoError(t, err)
		b.consume(kept) // the replayed task ran
		n, err = b.store.PurgeDelivered(b.ctx, t0.Add(24*time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, 1, n, "once resolved, the event ages out like any other")
	})

	t.Run("MarkConsumerFailed/InvalidCodeBecomesConsumerFailed", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.delivered("relay-a")
		ok, err := b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: ev.EventID, Code: "not a code", Message: "boom", At: t0})
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, outbox.ConsumerFailedCode, b.openFailures()[0].Code, "rule: outbox.NewConsumerFailureRecord decides the stored code")
	})

	t.Run("MarkConsumerFailed/AnyStatusOfAKnownEvent", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		delivering := b.claimOne("relay-a")
		pending := b.seed(t0, 1, "order.created")[0] // after the claim, so it stays pending
		for name, id := range map[string]string{
			"pending": pending.EventID, "delivering": delivering.EventID,
			"unknown": "6f1c1d2e-8a4b-4c3d-9e8f-0a1b2c3d4e5f", "not a uuid": "task-42",
		} {
			var before outbox.Event
			if name == "pending" || name == "delivering" {
				before = b.get(id)
			}
			ok, err := b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: id, Code: "X", Message: "boom", At: t0})
			require.NoError(t, err, "rule: a %s event is not an error", name)
			require.Equal(t, before.EventID != "", ok,
				"rule: a known event's failure is recorded whatever its status (the relay may mark it late, or lose its lease), an unknown id's is not (%s)", name)
			if before.EventID != "" {
				require.Equal(t, before, b.get(id), "rule: a %s event's row is left alone", name)
			}
		}
	})

	t.Run("Replay/AuditCommitsWithTheReplay", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		failed := b.failed("relay-a")
		res, err := b.store.Replay(b.ctx, ports.ReplayParams{
			EventIDs: []string{failed.EventID}, Request: replayReq, Now: t0.Add(time.Hour),
			Audit: auditRecord("outbox.replay", "outbox_batch", replayReq.BatchID),
		})
		require.NoError(t, err)
		require.Equal(t, []string{failed.EventID}, res.Replayed)
		require.Equal(t, outbox.Pending, b.get(failed.EventID).Status)
		audits := b.audits()
		require.Len(t, audits, 1, "rule: the audit record commits with the replay")
		require.Equal(t, "outbox.replay", audits[0].Action)
		require.Equal(t, failed.EventID, audits[0].After, "rule: the audit record lists the replayed ids")
	})

	t.Run("ReleaseLeases/AuditListsTheReleasedEvents", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		b.seed(t0, 2, "order.created")
		held := b.claim("relay-dead/0", t0, 2)
		ids, err := b.store.ReleaseLeases(b.ctx, ports.ReleaseParams{
			Owner: "relay-dead/0", Now: t0.Add(time.Second),
			Audit: auditRecord("outbox.release_leases", "outbox_lease_owner", "relay-dead/0"),
		})
		require.NoError(t, err)
		require.ElementsMatch(t, eventIDs(held), ids)
		audits := b.audits()
		require.Len(t, audits, 1, "rule: the audit record commits with the release")
		require.ElementsMatch(t, eventIDs(held), strings.Split(audits[0].After, ","), "rule: the audit record names the released events")
	})
}

func auditRecord(action, resourceType, resourceID string) ports.AuditRecord {
	return ports.AuditRecord{
		Action: action, Actor: "ops-1", ResourceType: resourceType, ResourceID: resourceID,
		Outcome: "accepted", Reason: "下游恢复后重放", RequestID: "req-audit-1", At: t0,
	}
}

// delivered seeds, claims and completes one event.
func (b *outboxBundle) delivered(owner string) outbox.Event {
	b.t.Helper()
	ev := b.claimOne(owner)
	lost, err := b.store.Complete(b.ctx, owner, t0, []ports.LeaseRef{ref(ev)})
	require.NoError(b.t, err)
	require.Empty(b.t, lost)
	return b.get(ev.EventID)
}

// failed seeds, claims and fails one event for good.
func (b *outboxBundle) failed(owner string) outbox.Event {
	b.t.Helper()
	ev := b.claimOne(owner)
	lost, err := b.store.Fail(b.ctx, owner, t0, []ports.FailItem{{Ref: ref(ev), Decision: finalDecision(t0, 1)}})
	require.NoError(b.t, err)
	require.Empty(b.t, lost)
	return b.get(ev.EventID)
}

// audits returns the audit records the store wrote, oldest first.
func (b *outboxBundle) audits() []outbox.AuditPayload {
	b.t.Helper()
	evs, err := b.store.List(b.ctx, ports.OutboxFilter{EventType: outbox.AuditEventType, Limit: 500})
	require.NoError(b.t, err)
	out := make([]outbox.AuditPayload, len(evs))
	for i, ev := range evs {
		require.NoError(b.t, json.Unmarshal(ev.Payload, &out[len(evs)-1-i]), "decode audit payload")
	}
	return out
}

func (b *outboxBundle) openFailures() []outbox.ConsumerFailureRecord {
	b.t.Helper()
	got, err := b.store.OpenConsumerFailures(b.ctx, ports.ConsumerFailureFilter{Limit: 500})
	require.NoError(b.t, err)
	return got
}
