package contracttests

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

func runOutboxOutage(t *testing.T, caps OutboxCaps, newStore func(t *testing.T) ports.OutboxStore) {
	t.Run("Outage/EveryMethodUnavailableAndNothingChanges", func(t *testing.T) {
		t.Parallel()
		requireOutageHook(t, caps.Outage == nil, "OutboxCaps.Outage")
		b := newOutboxBundle(t, newStore)
		evs := b.seed(t0, 2, "order.created")
		held := b.claim("relay-a", t0, 1)
		require.Len(t, held, 1, "claim one of two seeded events")
		before := b.all()

		down, restore := caps.Outage(t, b.store)
		at := t0.Add(time.Second)
		r := []ports.LeaseRef{ref(held[0])}
		fresh := event(t, t0, "order.created")
		replay := outbox.ReplayRequest{Operator: "ops-1", Reason: "下游恢复后重放", BatchID: "outage-1"}
		requireUnavailable(t, map[string]outageCall{
			"Append": func(ctx context.Context) error { return down.Append(ctx, fresh) },
			"Claim": func(ctx context.Context) error {
				_, err := down.Claim(ctx, ports.ClaimParams{Owner: "relay-b", Limit: 10, LeaseFor: leaseFor, Now: at})
				return err
			},
			"Complete": func(ctx context.Context) error { _, err := down.Complete(ctx, "relay-a", at, r); return err },
			"Fail": func(ctx context.Context) error {
				_, err := down.Fail(ctx, "relay-a", at, []ports.FailItem{{Ref: r[0], Decision: finalDecision(at, 1)}})
				return err
			},
			"Renew":   func(ctx context.Context) error { _, err := down.Renew(ctx, "relay-a", at, leaseFor, r); return err },
			"Release": func(ctx context.Context) error { _, err := down.Release(ctx, "relay-a", at, r); return err },
			"RecoverExpired": func(ctx context.Context) error {
				_, err := down.RecoverExpired(ctx, ports.RecoverParams{Now: t0.Add(2 * leaseFor), Limit: 10, Policy: recoverPolicy})
				return err
			},
			"Get": func(ctx context.Context) error { _, err := down.Get(ctx, evs[0].EventID); return err },
			"OpenConsumerFailures": func(ctx context.Context) error {
				_, err := down.OpenConsumerFailures(ctx, ports.ConsumerFailureFilter{})
				return err
			},
			"RequestConsumerReplay": func(ctx context.Context) error {
				_, err := down.RequestConsumerReplay(ctx, ports.ConsumerReplayParams{EventIDs: []string{evs[0].EventID}, BatchID: "b", Now: at})
				return err
			},
			"ResolveConsumerFailures": func(ctx context.Context) error {
				_, err := down.ResolveConsumerFailures(ctx, "b", []string{evs[0].EventID}, at)
				return err
			},
			"MarkConsumerFailed": func(ctx context.Context) error {
				_, err := down.MarkConsumerFailed(ctx, ports.ConsumerFailure{EventID: evs[0].EventID, Code: "X", Message: "boom", At: at})
				return err
			},
			"List": func(ctx context.Context) error { _, err := down.List(ctx, ports.OutboxFilter{}); return err },
			"Replay": func(ctx context.Context) error {
				_, err := down.Replay(ctx, ports.ReplayParams{EventIDs: []string{evs[0].EventID, evs[1].EventID}, Request: replay, Now: at})
				return err
			},
			"ReleaseLeases": func(ctx context.Context) error {
				_, err := down.ReleaseLeases(ctx, ports.ReleaseParams{Now: at})
				return err
			},
			"Stats":          func(ctx context.Context) error { _, err := down.Stats(ctx, at); return err },
			"PurgeDelivered": func(ctx context.Context) error { _, err := down.PurgeDelivered(ctx, t0.Add(time.Hour), 10); return err },
		})

		restore()
		require.Equal(t, before, b.all(), "after the outage: %s", OutageRule)
		_, err := b.store.Get(b.ctx, fresh.EventID)
		require.ErrorIs(t, err, ports.ErrNotFound, "an Append during the outage stored %s: %s", fresh.EventID, OutageRule)
		lost, err := b.store.Complete(b.ctx, "relay-a", at, r)
		require.NoError(t, err)
		require.Empty(t, lost, "the lease held before the outage is still held after it: %s", OutageRule)
	})
}

// all lists every event in the store, newest first.
func (b *outboxBundle) all() []outbox.Event {
	b.t.Helper()
	evs, err := b.store.List(b.ctx, ports.OutboxFilter{Limit: 500})
	require.NoError(b.t, err, "list every event")
	return evs
}
