package testdomain

import (
	"context"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// LogDuplicate is the consumer's line for a delivery of an event it
// already ran (the relay's failover test counts them).
const LogDuplicate = "td order already applied; duplicate delivery ignored"

// Applier consumes EventCreated.
type Applier struct {
	db    *bun.DB
	clock ports.Clock
}

// NewApplier returns the consumer on db; a nil clock is time.Now.
func NewApplier(db *bun.DB, clock ports.Clock) (*Applier, error) {
	if db == nil {
		return nil, errors.New("testdomain: NewApplier needs a db")
	}
	if clock == nil {
		clock = ports.SystemClock
	}
	return &Applier{db: db, clock: clock}, nil
}

// Consumer is the relay worker's consumer of EventCreated.
func (a *Applier) Consumer() queue.Consumer {
	return queue.Consumer{EventType: EventCreated, Name: ConsumerName, Handler: queue.Handle(a.Apply)}
}

// Apply records the event's consumption, the order's effect and its move
// to applied in one transaction, so a duplicate delivery changes nothing
// and a crash leaves either all three or none. An event that names no
// order of that owner and amount fails permanently.
func (a *Applier) Apply(ctx context.Context, env outbox.Envelope, p Created) error {
	now := a.clock.Now().UTC()
	return a.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		first, err := pgoutbox.RecordConsumption(ctx, tx, env.EventID, ConsumerName, now)
		if err != nil {
			return err
		}
		if !first { // this consumer already ran the event
			queue.LoggerFrom(ctx).InfoContext(ctx, LogDuplicate, "order_id", p.OrderID)
			return nil
		}
		err = pgidem.Transition(ctx, tx, pgidem.TransitionParams{
			Table: tableOrder, ID: p.OrderID, From: int16(StatusCreated), To: int16(StatusApplied),
			Set:          map[string]any{"updated_at": now},
			Allowed:      func(from, to int16) bool { return from == int16(StatusCreated) && to == int16(StatusApplied) },
			VisibleWhere: "owner = ? AND amount = ?", VisibleArgs: []any{p.Owner, p.Amount},
		})
		switch {
		case errors.Is(err, idempotency.ErrAlreadyDone):
			return nil // applied under another event id: nothing more
		case errors.Is(err, idempotency.ErrNotVisible):
			return outbox.Permanent(CodePayloadInvalid, "td order "+p.OrderID+": no such order of that owner and amount")
		case err != nil:
			return fmt.Errorf("testdomain: apply %s: %w", p.OrderID, err)
		}
		if _, err := tx.NewRaw(`INSERT INTO td_effect (order_id, event_id, owner, amount, applied_at) VALUES (?, ?, ?, ?, ?)`,
			p.OrderID, env.EventID, p.Owner, p.Amount, now).Exec(ctx); err != nil {
			return fmt.Errorf("testdomain: record the effect of %s: %w", p.OrderID, err)
		}
		return nil
	})
}
