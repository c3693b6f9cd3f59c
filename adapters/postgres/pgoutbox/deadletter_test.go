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
	} {
		ok, err := store.MarkConsumerFailed(ctx, ports.ConsumerFailure{EventID: tc.id, Code: "X", Message: "boom", At: now})
		require.NoError(t, err, "%s: %s", tc.name, tc.id)
		require.False(t, ok, "%s: %s must not be marked", tc.name, tc.id)
	}
	// Regression: a failure is recorded whatever the row's status
	// (the relay's Complete was lost and the row recovered to pending).
	ok, err := store.MarkConsumerFailed(ctx, ports.ConsumerFailure{EventID: pendingEv.EventID, Code: "X", Message: "boom", At: now})
	require.NoError(t, err)
	require.True(t, ok, "a pending event's consumer failure is recorded")
	got, err := store.Get(ctx, pendingEv.EventID)
	require.NoError(t, err)
	require.Equal(t, outbox.Pending, got.Status, "a pending row is untouched")

	long := strings.Repeat("é", outbox.MaxErrorMessageBytes) // 1024 bytes, 512 runes
	before, err := store.Get(ctx, deliveredEv.EventID)
	require.NoError(t, err)
	ok, err = store.MarkConsumerFailed(ctx, ports.ConsumerFailure{EventID: deliveredEv.EventID, Code: "", Message: "line1\n" + long, At: now})
	require.NoError(t, err)
	require.True(t, ok, "a delivered event's failure is recorded")
	// REGRESSION: the consumer's failure turned the Delivered row
	// into Failed, breaking "a delivered row never changes again".
	got, err = store.Get(ctx, deliveredEv.EventID)
	require.NoError(t, err)
	require.Equal(t, before, got, "the delivered row does not change")
	var code, msg string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT error_code, error_message FROM tb_outbox_consumer_failure WHERE event_id = ?::uuid AND resolved_at IS NULL`,
		deliveredEv.EventID).Scan(&code, &msg))
	require.Equal(t, outbox.ConsumerFailedCode, code)
	require.True(t, strings.HasPrefix(msg, "line1 éé"), "message %q", msg)
	require.LessOrEqual(t, len(msg), outbox.MaxErrorMessageBytes)

	ok, err = store.MarkConsumerFailed(ctx, ports.ConsumerFailure{EventID: deliveredEv.EventID, Code: "OTHER", Message: "again", At: now.Add(time.Minute)})
	require.NoError(t, err)
	require.False(t, ok, "an open failure is not recorded twice")

	res, err := store.Replay(ctx, ports.ReplayParams{
		EventIDs: []string{deliveredEv.EventID}, Now: now.Add(time.Minute),
		Request: outbox.ReplayRequest{Operator: "ops", Reason: "consumer fixed", BatchID: "b-1"},
	})
	require.NoError(t, err)
	require.Empty(t, res.Replayed, "the store never re-queues a delivered row; relay.Operator replays consumer failures through the queue")
}
