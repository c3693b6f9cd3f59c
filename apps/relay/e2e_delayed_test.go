package main_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/internal/pgtopo"
)

// DELAYED EVENTS through the real relay binary: events appended with a
// not-before time are published at that time and never before, and a
// Postgres crash between their commit and their due time loses none: the
// delay lives in the row (next_attempt_at, not_before), not in a timer of
// the relay's. Events due now flow past them meanwhile.
func TestE2EDelayedEventsSurviveAPostgresRestart(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	srv := pgtopo.StartServer(t, "")
	w := privateWorld(t, srv.URL, "delayed")
	bdb := w.db.Bun

	// Due well after the restart below, so the restart falls inside the delay.
	const n = 20
	due := time.Now().Add(20 * time.Second)
	var delayed []outbox.Event
	for i := range n {
		o := orderCreated{OrderID: fmt.Sprintf("later-%02d", i), Amount: i}
		ev, err := outbox.New(outbox.NewParams{
			EventID: uuid.NewString(), EventType: orderCreatedType, PayloadVersion: 1,
			AggregateType: "order", AggregateID: o.OrderID, ResourceType: "order", ResourceID: o.OrderID,
			RequestID: "req-later", Payload: o, Now: time.Now(), NotBefore: due,
		})
		require.NoError(t, err)
		delayed = append(delayed, ev)
	}
	require.NoError(t, bdb.RunInTx(t.Context(), nil, func(ctx context.Context, tx bun.Tx) error {
		return pgoutbox.Append(ctx, tx, delayed...)
	}))
	w.commitMany("now", n, 5)
	w.startConsumer()
	w.startRelay("relay-a", "RELAY_LOOPS=1")

	const early = `SELECT count(*) FROM tb_outbox_event WHERE not_before IS NOT NULL AND (status <> 1 OR delivered_at < not_before)`
	const notDelayed = `SELECT count(*) FROM consumed c JOIN tb_outbox_event e USING (event_id) WHERE e.not_before IS NULL`
	w.waitCountProgress(n, notDelayed)
	if time.Now().Before(due) {
		require.Zero(t, w.count(early), "nothing delayed left its row before it was due")
	}

	srv.Kill(t)
	srv.Start(t)
	// The pool's connections died with the server: a failed count is retried.
	waitProgress(t, "every order consumed after the restart", stallLimit, false, func() (int, bool, string) {
		var c int
		if err := bdb.NewRaw(consumedAll).Scan(t.Context(), &c); err != nil {
			return -1, false, err.Error()
		}
		return c, c == 2*n, fmt.Sprintf("%d of %d consumed", c, 2*n)
	})
	require.Zero(t, w.count(`SELECT count(*) FROM tb_outbox_event WHERE not_before IS NOT NULL AND delivered_at < not_before`),
		"a delayed event was published before its not_before")
	require.Equal(t, n, w.count(`SELECT count(*) FROM tb_outbox_event WHERE not_before IS NOT NULL AND status = 3`), "every delayed event delivered")
	require.Zero(t, w.count(`SELECT count(*) FROM tb_outbox_event WHERE status <> 3`), "nothing left pending, claimed or failed")
}
