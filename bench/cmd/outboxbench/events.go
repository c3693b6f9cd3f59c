package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/core/outbox"
)

// orderPlaced is a typical small event payload (about 120 bytes).
type orderPlaced struct {
	OrderID     string `json:"order_id"`
	CustomerID  string `json:"customer_id"`
	AmountCents int    `json:"amount_cents"`
	Currency    string `json:"currency"`
	Items       int    `json:"items"`
}

// newEvents builds n events due at now, outside any timing.
func newEvents(n int, now time.Time) ([]outbox.Event, error) {
	evs := make([]outbox.Event, n)
	for i := range evs {
		id := uuid.NewString()
		order := "ord-" + strconv.Itoa(i)
		ev, err := outbox.New(outbox.NewParams{
			EventID: id, EventType: "order.placed", PayloadVersion: 1,
			AggregateType: "order", AggregateID: order, ResourceType: "order", ResourceID: order,
			RequestID: "req-" + id[:13],
			Payload:   orderPlaced{OrderID: order, CustomerID: "cus-" + id[:8], AmountCents: 1299 + i%100, Currency: "CNY", Items: 1 + i%5},
			Now:       now,
		})
		if err != nil {
			return nil, fmt.Errorf("build event %d: %w", i, err)
		}
		evs[i] = ev
	}
	return evs, nil
}

// prefill appends evs through pgoutbox.Append, chunk events per statement,
// then refreshes the planner statistics as a steady table would have them.
func prefill(ctx context.Context, db *bun.DB, evs []outbox.Event, chunk int) error {
	for i := 0; i < len(evs); i += chunk {
		if err := pgoutbox.Append(ctx, db, evs[i:min(i+chunk, len(evs))]...); err != nil {
			return err
		}
	}
	if _, err := db.ExecContext(ctx, "VACUUM ANALYZE tb_outbox_event"); err != nil {
		return fmt.Errorf("vacuum outbox: %w", err)
	}
	return nil
}
