package pgoutbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

func TestMarkConsumerFailed(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	store, err := pgoutbox.NewStore(db, pgoutbox.Config{})
	require.NoError(t, err)
	ctx := t.Context()
	deliveredEv, pendingEv := newOutboxEvent(t), newOutboxEvent(t)
	require.NoError(t, store.Append(ctx, deliveredEv))
	claimed, err := store.Claim(ctx, ports.ClaimParams{Owner: "relay-a", Limit: 1, LeaseFor: time.Minute, Now: outboxT0})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	deliveredAt := outboxT0.Add(time.Second)
	lost, err := store.Complete(ctx, "relay-a", deliveredAt, []ports.LeaseRef{{ID: claimed[0].ID, Token: claimed[0].Lease.Token}})
	require.NoError(t, err)
	require.Empty(t, lost)
	require.NoError(t, store.Append(ctx, pendingEv))

	now := outboxT0.Add(time.Hour)
	for _, tc := range []struct {
		name, id string
	}{
		{"Unknown", uuid.NewString()},
		{"NotUUID", "task-42"},
		{"Pending", pendingEv.EventID},
	} {
		ok, err := store.MarkConsumerFailed(ctx, ports.ConsumerFailure{EventID: tc.id, Code: "X", Message: "boom", At: now})
		require.NoError(t, err, "%s: %s", tc.name, tc.id)
		require.False(t, ok, "%s: %s must not be marked", tc.name, tc.id)
	}
	got, err := store.Get(ctx, pendingEv.EventID)
	require.NoError(t, err)
	require.Equal(t, outbox.Pending, got.Status, "a pending row is untouched")

	long := strings.Repeat("é", outbox.MaxErrorMessageBytes) // 1024 bytes, 512 runes
	ok, err := store.MarkConsumerFailed(ctx, ports.ConsumerFailure{EventID: deliveredEv.EventID, Code: "", Message: "line1\n" + long, At: now})
	require.NoError(t, err)
	require.True(t, ok, "a delivered row is marked")
	got, err = store.Get(ctx, deliveredEv.EventID)
	require.NoError(t, err)
	require.Equal(t, outbox.Failed, got.Status)
	require.Equal(t, outbox.ConsumerFailedCode, got.LastErrorCode)
	require.True(t, strings.HasPrefix(got.LastErrorMessage, "line1 éé"), "message %q", got.LastErrorMessage)
	require.LessOrEqual(t, len(got.LastErrorMessage), outbox.MaxErrorMessageBytes)
	require.True(t, now.Equal(got.UpdatedAt), "updated_at %s", got.UpdatedAt)
	require.NotNil(t, got.DeliveredAt, "delivered_at is kept as history")
	require.True(t, deliveredAt.Equal(*got.DeliveredAt), "delivered_at %s", got.DeliveredAt)
	require.JSONEq(t, string(deliveredEv.Payload), string(got.Payload))

	ok, err = store.MarkConsumerFailed(ctx, ports.ConsumerFailure{EventID: deliveredEv.EventID, Code: "OTHER", Message: "again", At: now.Add(time.Minute)})
	require.NoError(t, err)
	require.False(t, ok, "an already failed row is not marked twice")
	got, err = store.Get(ctx, deliveredEv.EventID)
	require.NoError(t, err)
	require.Equal(t, outbox.ConsumerFailedCode, got.LastErrorCode, "the first failure is kept")

	res, err := store.Replay(ctx, ports.ReplayParams{
		EventIDs: []string{deliveredEv.EventID}, Now: now.Add(time.Minute),
		Request: outbox.ReplayRequest{Operator: "ops", Reason: "consumer fixed", BatchID: "b-1"},
	})
	require.NoError(t, err)
	require.Equal(t, []string{deliveredEv.EventID}, res.Replayed, "a consumer-failed event is replayable")
}
