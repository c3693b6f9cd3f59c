package pgoutbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// Regression: a claim was bounded by rows only, so 1,000 pending events at
// the payload cap took the relay to 581 MiB, past its 512 Mi pod limit. A
// claim returns the prefix of due rows whose payloads fit Config.ClaimBytes
// (the first row always); the rest stay Pending for the next claim, in
// order.
func TestClaimBoundsPayloadBytes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	store, err := pgoutbox.NewStore(db, pgoutbox.Config{ClaimBytes: 3 * outbox.MaxPayloadBytes})
	require.NoError(t, err)
	big := strings.Repeat("x", outbox.MaxPayloadBytes-64) // with the JSON around it, just under the cap
	var ids []string
	for i := range 7 {
		ev := newOutboxEvent(t)
		ev.CreatedAt, ev.NextAttemptAt = outboxT0.Add(time.Duration(i)*time.Millisecond), outboxT0.Add(time.Duration(i)*time.Millisecond)
		ev.Payload = []byte(`{"blob":"` + big + `"}`)
		require.NoError(t, pgoutbox.Append(ctx, db, ev))
		ids = append(ids, ev.EventID)
	}
	p := ports.ClaimParams{Owner: "relay-a", Limit: 100, LeaseFor: 30 * time.Second, Now: outboxT0.Add(time.Second)}
	var got []string
	for _, want := range []int{3, 3, 1, 0} {
		claimed, err := store.Claim(ctx, p)
		require.NoError(t, err)
		require.Len(t, claimed, want, "rule: a claim holds at most ClaimBytes of payload")
		for _, ev := range claimed {
			got = append(got, ev.EventID)
		}
	}
	require.Equal(t, ids, got, "rule: the rows left over are claimed next, in order")

	_, err = pgoutbox.NewStore(db, pgoutbox.Config{ClaimBytes: outbox.MaxPayloadBytes - 1})
	require.Error(t, err, "rule: a budget below one payload at the cap is refused")
}
