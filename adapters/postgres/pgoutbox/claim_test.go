package pgoutbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// Claim returns a named subset of the columns and fills the rest from what
// it wrote; whatever it hands the relay must equal the stored row, field by
// field, including after a failed attempt (retry count, error, token 2).
func TestClaimReturnsTheStoredRow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	store, err := pgoutbox.NewStore(db, pgoutbox.Config{})
	require.NoError(t, err)

	ev := newOutboxEvent(t)
	ev.BusinessKey = "order-key-1"
	ev.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ev.TraceState = "vendor=1"
	require.NoError(t, pgoutbox.Append(ctx, db, ev))

	// A Now with nanoseconds: the stored times keep microseconds.
	now := outboxT0.Add(time.Second + 123456789)
	p := ports.ClaimParams{Owner: "relay-a", Limit: 10, LeaseFor: 30 * time.Second, Now: now}
	claimed, err := store.Claim(ctx, p)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	stored, err := store.Get(ctx, ev.EventID)
	require.NoError(t, err)
	require.Equal(t, stored, claimed[0], "rule: a claimed event is the stored row")

	ref := ports.LeaseRef{ID: claimed[0].ID, Token: claimed[0].Lease.Token}
	lost, err := store.Fail(ctx, p.Owner, now, []ports.FailItem{{Ref: ref, Decision: outbox.FailureDecision{
		Status: outbox.Pending, NextAttemptAt: now, RetryCount: 1, Code: "QUEUE_UNAVAILABLE", Message: "redis down", Class: outbox.ClassTransient,
	}}})
	require.NoError(t, err)
	require.Empty(t, lost)

	p.Now = now.Add(time.Second)
	claimed, err = store.Claim(ctx, p)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	stored, err = store.Get(ctx, ev.EventID)
	require.NoError(t, err)
	require.Equal(t, int64(2), stored.Lease.Token)
	require.Equal(t, "QUEUE_UNAVAILABLE", stored.LastErrorCode)
	require.Equal(t, stored, claimed[0], "rule: a reclaimed event is the stored row")
}
