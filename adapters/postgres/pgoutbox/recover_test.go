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

// recoverSQL repeats outbox.Recover (Policy.OnLeaseExpired) in SQL: for
// every retry_count, including those past the 64 backoff ceilings the
// statement receives and the last attempt, the stored row must be what
// outbox.Recover makes of it, its next_attempt_at within the jitter range
// Recover allows (rnd 0 to just below 1), to the microsecond.
func TestRecoverMirrorsOutboxRecover(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	store, err := pgoutbox.NewStore(db, pgoutbox.Config{})
	require.NoError(t, err)

	// An odd base so the ceilings are not whole seconds; the max is
	// reached at attempt 20.
	policy := outbox.Policy{MaxAttempts: 100, Backoff: outbox.Backoff{Base: 3*time.Millisecond + 7*time.Microsecond, Max: 7 * time.Minute}}
	retries := []int{0, 1, 2, 5, 19, 20, 62, 63, 64, 65, 80, 98, 99, 150}
	evs := make([]outbox.Event, len(retries))
	for i := range evs {
		evs[i] = newOutboxEvent(t)
	}
	require.NoError(t, pgoutbox.Append(ctx, db, evs...))
	claimed, err := store.Claim(ctx, ports.ClaimParams{Owner: "relay-dead", Limit: len(evs), LeaseFor: time.Minute, Now: outboxT0})
	require.NoError(t, err)
	require.Len(t, claimed, len(evs))
	before := map[string]outbox.Event{}
	for i, ev := range evs {
		_, err := db.NewRaw("UPDATE tb_outbox_event SET retry_count = ? WHERE event_id = ?::uuid", retries[i], ev.EventID).Exec(ctx)
		require.NoError(t, err)
		before[ev.EventID], err = store.Get(ctx, ev.EventID)
		require.NoError(t, err)
	}

	now := outboxT0.Add(time.Minute + 987654321) // nanoseconds: the store keeps microseconds
	res, err := store.RecoverExpired(ctx, ports.RecoverParams{Now: now, Limit: 100, Policy: policy})
	require.NoError(t, err)
	require.Equal(t, len(evs), res.Recovered())
	stamp := now.Truncate(time.Microsecond)
	for i, ev := range evs {
		got, err := store.Get(ctx, ev.EventID)
		require.NoError(t, err)
		lo, err := outbox.Recover(before[ev.EventID], policy, stamp, 0)
		require.NoError(t, err)
		hi, err := outbox.Recover(before[ev.EventID], policy, stamp, 1-1e-12)
		require.NoError(t, err)
		require.False(t, got.NextAttemptAt.Before(lo.NextAttemptAt.Add(-time.Microsecond)) || got.NextAttemptAt.After(hi.NextAttemptAt.Add(time.Microsecond)),
			"retry_count %d: next_attempt_at %s outside outbox.Recover's [%s, %s]", retries[i], got.NextAttemptAt, lo.NextAttemptAt, hi.NextAttemptAt)
		got.NextAttemptAt, got.UpdatedAt = lo.NextAttemptAt, lo.UpdatedAt
		require.Equal(t, lo, got, "retry_count %d: the row is what outbox.Recover makes of it", retries[i])
	}
	require.Len(t, res.Failed, 2, "retry_count 99 and 150 used their last attempt")
	for _, f := range res.Failed {
		require.GreaterOrEqual(t, f.RetryCount, policy.MaxAttempts)
	}

	// One attempt in all: the first lost lease fails the event.
	one := newOutboxEvent(t)
	require.NoError(t, pgoutbox.Append(ctx, db, one))
	_, err = store.Claim(ctx, ports.ClaimParams{Owner: "relay-dead", Limit: 1, LeaseFor: time.Minute, Now: outboxT0})
	require.NoError(t, err)
	res, err = store.RecoverExpired(ctx, ports.RecoverParams{Now: now, Limit: 10, Policy: outbox.Policy{MaxAttempts: 1}})
	require.NoError(t, err)
	require.Len(t, res.Failed, 1)
	require.Equal(t, []ports.RecoveredFailure{{ID: res.Failed[0].ID, EventID: one.EventID, EventType: one.EventType, RetryCount: 1}}, res.Failed)
	require.Zero(t, res.Requeued)
}
