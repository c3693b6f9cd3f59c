package contracttests

import (
	"context"
	"encoding/json"
	"errors"
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
	t.Run("MarkConsumerFailed/DeliveredBecomesFailed", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.delivered("relay-a")
		at := t0.Add(time.Minute)
		ok, err := b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: ev.EventID, Code: "ORDER_UNKNOWN", Message: "order o-1 not found", At: at})
		require.NoError(t, err)
		require.True(t, ok, "rule: a Delivered event is marked")
		got := b.get(ev.EventID)
		requireSameIdentity(t, ev, got, "rule: a consumer failure keeps event_id and payload")
		require.Equal(t, outbox.Failed, got.Status)
		require.Equal(t, "ORDER_UNKNOWN", got.LastErrorCode, "a valid code is kept")
		require.Equal(t, "order o-1 not found", got.LastErrorMessage)
		require.NotNil(t, got.DeliveredAt, "delivered_at stays as history")

		ok, err = b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: ev.EventID, Code: "OTHER", Message: "again", At: at.Add(time.Minute)})
		require.NoError(t, err)
		require.False(t, ok, "rule: a second mark changes nothing")
		require.Equal(t, got, b.get(ev.EventID), "rule: a second mark changes nothing")
	})

	t.Run("MarkConsumerFailed/InvalidCodeBecomesConsumerFailed", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		ev := b.delivered("relay-a")
		ok, err := b.store.MarkConsumerFailed(b.ctx, ports.ConsumerFailure{EventID: ev.EventID, Code: "not a code", Message: "boom", At: t0})
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, outbox.ConsumerFailedCode, b.get(ev.EventID).LastErrorCode, "rule: outbox.ConsumerFailed decides the stored code")
	})

	t.Run("MarkConsumerFailed/OnlyDeliveredEvents", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		pending := b.seed(t0, 1, "order.created")[0]
		delivering := b.claimOne("relay-a")
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
			require.False(t, ok, "rule: only a Delivered event is marked, not a %s one", name)
			if before.EventID != "" {
				require.Equal(t, before, b.get(id), "rule: a %s event is left alone", name)
			}
		}
	})

	t.Run("Replay/AuditCommitsWithTheReplay", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		failed := b.failed("relay-a")
		var hooked []string
		res, err := b.store.Replay(b.ctx, ports.ReplayParams{
			EventIDs: []string{failed.EventID}, Request: replayReq, Now: t0.Add(time.Hour),
			BeforeCommitFunc: func(_ context.Context, ids []string) error { hooked = ids; return nil },
			Audit:            auditRecord("outbox.replay", "outbox_batch", replayReq.BatchID),
		})
		require.NoError(t, err)
		require.Equal(t, []string{failed.EventID}, res.Replayed)
		require.Equal(t, []string{failed.EventID}, hooked, "rule: BeforeCommitFunc is told the replayed ids")
		require.Equal(t, outbox.Pending, b.get(failed.EventID).Status)
		audits := b.audits()
		require.Len(t, audits, 1, "rule: the audit record commits with the replay")
		require.Equal(t, "outbox.replay", audits[0].Action)
		require.Equal(t, failed.EventID, audits[0].After, "rule: the audit record lists the replayed ids")
	})

	t.Run("Replay/HookErrorChangesNothing", func(t *testing.T) {
		t.Parallel()
		b := newOutboxBundle(t, newStore)
		failed := b.failed("relay-a")
		before := b.get(failed.EventID)
		boom := errors.New("retained task is active")
		_, err := b.store.Replay(b.ctx, ports.ReplayParams{
			EventIDs: []string{failed.EventID}, Request: replayReq, Now: t0.Add(time.Hour),
			BeforeCommitFunc: func(context.Context, []string) error { return boom },
			Audit:            auditRecord("outbox.replay", "outbox_batch", replayReq.BatchID),
		})
		require.ErrorIs(t, err, boom, "rule: the hook's error is returned")
		require.Equal(t, before, b.get(failed.EventID), "rule: a failed hook rolls the replay back")
		require.Empty(t, b.audits(), "rule: a failed hook rolls the audit record back")
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
