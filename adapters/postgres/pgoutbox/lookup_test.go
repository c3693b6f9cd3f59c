package pgoutbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// The lookup indexes skip Delivering rows (so a claim writes none of them);
// vw_outbox_event and List still find an aggregate's events in every
// status, and each half of the view reads an index, not the table.
func TestLookupsFindEveryStatus(t *testing.T) {
	t.Parallel()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	store, err := pgoutbox.NewStore(db, pgoutbox.Config{})
	require.NoError(t, err)
	ctx := t.Context()

	evs := make([]outbox.Event, 4)
	for i := range evs {
		ev, err := outbox.New(outbox.NewParams{
			EventID: uuid.NewString(), EventType: "order.placed", PayloadVersion: 1,
			AggregateType: "order", AggregateID: "x", ResourceType: "order", ResourceID: "x",
			RequestID: "req-x", CorrelationID: "x", Payload: map[string]any{"n": i}, Now: outboxT0,
		})
		require.NoError(t, err)
		evs[i] = ev
	}
	require.NoError(t, pgoutbox.Append(ctx, db, evs...))
	// One event stays pending, one is delivering, one delivered, one failed.
	claimed, err := store.Claim(ctx, ports.ClaimParams{Owner: "w", Limit: 3, LeaseFor: time.Minute, Now: outboxT0})
	require.NoError(t, err)
	require.Len(t, claimed, 3)
	_, err = db.ExecContext(ctx, `UPDATE tb_outbox_event SET status = 3, delivered_at = now(), lease_owner = NULL, lease_expires_at = NULL WHERE id = ?`, claimed[1].ID)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `UPDATE tb_outbox_event SET status = 4, lease_owner = NULL, lease_expires_at = NULL WHERE id = ?`, claimed[2].ID)
	require.NoError(t, err)

	got, err := store.List(ctx, ports.OutboxFilter{AggregateType: evs[0].AggregateType, AggregateID: evs[0].AggregateID})
	require.NoError(t, err)
	statuses := map[outbox.Status]int{}
	for _, e := range got {
		statuses[e.Status]++
	}
	require.Equal(t, map[outbox.Status]int{outbox.Pending: 1, outbox.Delivering: 1, outbox.Delivered: 1, outbox.Failed: 1}, statuses)

	for _, where := range []string{
		"aggregate_type = 'order' AND aggregate_id = 'x'",
		"resource_type = 'order' AND resource_id = 'x'",
		"correlation_id = 'x'",
	} {
		plan := explain(t, db, "SELECT * FROM vw_outbox_event WHERE "+where)
		require.NotContains(t, plan, "Seq Scan", "%s must read indexes for both halves:\n%s", where, plan)
		require.Contains(t, plan, "_unleased", "%s reads the partial lookup index:\n%s", where, plan)
	}
}

// explain returns the plan of q with sequential scans priced out, so it
// names an index whenever one can answer q.
func explain(t *testing.T, db *bun.DB, q string) string {
	t.Helper()
	var plan []string
	err := db.RunInTx(t.Context(), nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
			return err
		}
		return tx.NewRaw("EXPLAIN "+q).Scan(ctx, &plan)
	})
	require.NoError(t, err)
	return strings.Join(plan, "\n")
}
