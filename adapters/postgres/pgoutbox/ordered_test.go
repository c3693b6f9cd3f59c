package pgoutbox_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

func cardEvent(t *testing.T, card, eventType string, ordered bool) outbox.Event {
	t.Helper()
	ev, err := outbox.New(outbox.NewParams{
		EventID: uuid.NewString(), EventType: eventType, PayloadVersion: 1,
		AggregateType: "card", AggregateID: card, ResourceType: "card", ResourceID: card,
		RequestID: "req-" + card, Payload: map[string]any{"card_id": card}, Now: time.Now(), Ordered: ordered,
	})
	require.NoError(t, err)
	return ev
}

// Ordered events of one aggregate from concurrent transactions: the second
// writer waits in Append until the first commits, so its row takes the
// larger id and commits after. Without the wait it could draw the larger id,
// commit first, and be published before its uncommitted predecessor exists
// for the relay. Unordered events and other aggregates do not wait.
func TestOrderedWritersOfOneAggregateCommitInIDOrder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun

	first := cardEvent(t, "card-1", "card.activated", true)
	tx1, err := db.BeginTx(ctx, &sql.TxOptions{})
	require.NoError(t, err)
	require.NoError(t, pgoutbox.Append(ctx, tx1, first))

	// Other writers go through while tx1 is open.
	require.NoError(t, pgoutbox.Append(ctx, db, cardEvent(t, "card-1", "card.viewed", false)), "an unordered event does not wait")
	require.NoError(t, pgoutbox.Append(ctx, db, cardEvent(t, "card-2", "card.activated", true)), "another aggregate does not wait")

	second := cardEvent(t, "card-1", "card.suspended", true)
	done := make(chan error, 1)
	go func() {
		done <- db.RunInTx(context.WithoutCancel(ctx), nil, func(ctx context.Context, tx bun.Tx) error {
			return pgoutbox.Append(ctx, tx, second)
		})
	}()
	// Wait for the second writer to block on the aggregate's lock; if it
	// finishes first, it did not wait for tx1.
	for waiting := false; !waiting; {
		select {
		case err := <-done:
			t.Fatalf("rule: the second ordered writer of card-1 committed (err %v) while the first was still open", err)
		default:
		}
		var n int
		require.NoError(t, db.NewRaw(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(ctx, &n))
		waiting = n > 0
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, tx1.Commit())
	require.NoError(t, <-done)

	var ids []int64
	require.NoError(t, db.NewRaw(`SELECT id FROM tb_outbox_event WHERE event_id IN (?, ?) ORDER BY event_id = ? DESC`,
		first.EventID, second.EventID, first.EventID).Scan(ctx, &ids))
	require.Len(t, ids, 2)
	require.Less(t, ids[0], ids[1], "the first writer's event has the smaller id")
}

// The consumption record of an ordered event lets the next one of its
// aggregate go: writing it notifies the relays' channel, so the next event
// does not wait for the poll. An unordered record notifies nobody.
func TestRecordingAnOrderedConsumptionWakesTheRelays(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tdb := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	store, err := pgoutbox.NewStore(tdb.Bun, pgoutbox.Config{AsynchronousCommit: true})
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, tdb.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.WithoutCancel(ctx)) })
	plain, card := cardEvent(t, "card-1", "card.viewed", false), cardEvent(t, "card-1", "card.activated", true)
	require.NoError(t, store.Append(ctx, plain, card)) // notifies too: listen after it
	_, err = conn.Exec(ctx, "LISTEN "+postgres.OutboxChannel)
	require.NoError(t, err)
	require.NoError(t, store.RecordConsumed(ctx, []ports.Consumption{{EventID: plain.EventID, Consumer: "c", At: time.Now()}}))
	_, err = tdb.Bun.ExecContext(ctx, "SELECT pg_notify(?, 'marker')", postgres.OutboxChannel)
	require.NoError(t, err)
	n, err := conn.WaitForNotification(ctx)
	require.NoError(t, err)
	require.Equal(t, "marker", n.Payload, "an unordered record notifies nobody (the marker comes first)")

	require.NoError(t, store.RecordConsumed(ctx, []ports.Consumption{
		{EventID: plain.EventID, Consumer: "d", At: time.Now()},
		{EventID: card.EventID, Consumer: "c", At: time.Now(), Ordered: true},
	}))
	_, err = tdb.Bun.ExecContext(ctx, "SELECT pg_notify(?, 'marker')", postgres.OutboxChannel)
	require.NoError(t, err)
	n, err = conn.WaitForNotification(ctx)
	require.NoError(t, err)
	require.Equal(t, "", n.Payload, "rule: an ordered record wakes the relays (before the marker sent after it)")
	var recorded int
	require.NoError(t, tdb.Bun.NewRaw(`SELECT count(*) FROM tb_outbox_consumption`).Scan(ctx, &recorded))
	require.Equal(t, 3, recorded, "the records are written with the wake-up")
}
