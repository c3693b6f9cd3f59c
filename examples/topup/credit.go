package topup

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// DefaultCreditAttempts bounds the version-lock retries of one credit;
// after them the task fails and asynq retries it later.
const DefaultCreditAttempts = 5

// Crediter credits wallets for topup.created events.
type Crediter struct {
	db       *bun.DB
	clock    ports.Clock
	log      *slog.Logger
	attempts int
}

// NewCrediter returns a Crediter on db. A nil clock means time.Now, a nil
// log slog.Default().
func NewCrediter(db *bun.DB, clock ports.Clock, log *slog.Logger) (*Crediter, error) {
	if db == nil {
		return nil, errors.New("topup: NewCrediter needs a db")
	}
	if clock == nil {
		clock = ports.ClockFunc(time.Now)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Crediter{db: db, clock: clock, log: log, attempts: DefaultCreditAttempts}, nil
}

// CreditConsumer names the crediter in its consumption records.
const CreditConsumer = "topup-credit"

// Consumer is the relay worker's consumer of topup.created.
func (c *Crediter) Consumer() queue.Consumer {
	return queue.Consumer{EventType: EventCreated, Name: CreditConsumer, Handler: queue.Handle(c.Credit)}
}

// Credit adds the order's amount to the agent's wallet at most once, in one
// transaction:
//
//  0. record the event's consumption (pgoutbox.RecordConsumption): an
//     event this consumer already ran (a duplicate delivery, a task the
//     relay published again after the queue lost it) changes nothing;
//  1. insert the order's ledger entry; ON CONFLICT (order_id) DO NOTHING
//     means the credit already happened (a duplicate delivery, a retry
//     after a lost ack): return nil and change nothing;
//  2. add the amount under the wallet's version lock, re-reading and
//     retrying on a *idempotency.VersionConflictError (another order of
//     the same agent credited concurrently);
//  3. move the order created -> credited with a conditional update.
//
// A concurrent duplicate blocks on the ledger's unique index until the
// first commits, then finds the entry. An event that contradicts its order
// fails permanently (outbox.Permanent, no retries).
func (c *Crediter) Credit(ctx context.Context, env outbox.Envelope, p Created) error {
	now := c.clock.Now().UTC()
	log := c.logger(ctx)
	return c.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var o Order
		err := tx.NewSelect().Model(&o).Column("id", "agent_id", "amount_cents", "status").
			Where("id = ?", p.TopupID).Limit(1).Scan(ctx)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return outbox.Permanent(CodePayloadInvalid, "topup "+p.TopupID+": no such order")
		case err != nil:
			return fmt.Errorf("topup: read order %s: %w", p.TopupID, err)
		case o.AgentID != p.AgentID || o.AmountCents != p.AmountCents:
			return outbox.Permanent(CodePayloadInvalid, "topup "+p.TopupID+": event does not match the order")
		}

		first, err := pgoutbox.RecordConsumption(ctx, tx, env.EventID, CreditConsumer, now)
		if err != nil {
			return fmt.Errorf("topup: credit %s: %w", o.ID, err)
		}
		if !first {
			log.InfoContext(ctx, "topup already credited; duplicate delivery ignored", slog.String("topup_id", o.ID))
			return nil
		}

		entry := &LedgerEntry{AgentID: o.AgentID, OrderID: o.ID, AmountCents: o.AmountCents, EventID: env.EventID, CreatedAt: now}
		res, err := tx.NewInsert().Model(entry).On("CONFLICT (order_id) DO NOTHING").Exec(ctx)
		if err != nil {
			return fmt.Errorf("topup: insert ledger entry of %s: %w", o.ID, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			log.InfoContext(ctx, "topup already credited; duplicate delivery ignored", slog.String("topup_id", o.ID))
			return nil
		}

		version, err := c.addToWallet(ctx, tx, log, o.AgentID, o.AmountCents, now)
		if err != nil {
			return err
		}
		err = pgidem.Transition(ctx, tx, pgidem.TransitionParams{
			Table: tableOrder, ID: o.ID, From: int16(StatusCreated), To: int16(StatusCredited),
			Set: map[string]any{"updated_at": now}, Allowed: allowed,
		})
		if err != nil && !errors.Is(err, idempotency.ErrAlreadyDone) {
			return fmt.Errorf("topup: mark %s credited: %w", o.ID, err)
		}
		log.InfoContext(ctx, "topup credited", slog.String("topup_id", o.ID), slog.Int64("wallet_version", version))
		return nil
	})
}

// addToWallet creates the wallet if needed and adds amount under the
// version lock. Under READ COMMITTED each re-read sees the latest commit,
// so retrying inside the transaction converges.
func (c *Crediter) addToWallet(ctx context.Context, tx bun.Tx, log *slog.Logger, agent string, amount int64, now time.Time) (int64, error) {
	var lastErr error
	for range c.attempts {
		var w Wallet
		err := tx.NewSelect().Model(&w).Column("balance_cents", "version").
			Where("agent_id = ?", agent).Limit(1).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			// First credit: create the zero wallet (a concurrent creator
			// wins harmlessly), then read it like any other.
			_, err = tx.NewInsert().Model(&Wallet{AgentID: agent, CreatedAt: now, UpdatedAt: now}).
				On("CONFLICT (agent_id) DO NOTHING").Exec(ctx)
			if err != nil {
				return 0, fmt.Errorf("topup: create wallet: %w", err)
			}
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("topup: read wallet: %w", err)
		}
		next, err := pgidem.UpdateVersioned(ctx, tx, pgidem.VersionedParams{
			Table: tableWallet, IDColumn: "agent_id", ID: agent, ExpectedVersion: w.Version,
			Set: map[string]any{"balance_cents": w.BalanceCents + amount, "updated_at": now},
		})
		var conflict *idempotency.VersionConflictError
		if errors.As(err, &conflict) {
			log.InfoContext(ctx, "topup wallet version conflict; re-reading",
				slog.Int64("expected", conflict.Expected), slog.Int64("actual", conflict.Actual))
			lastErr = err
			continue
		}
		return next, err
	}
	return 0, fmt.Errorf("topup: credit wallet after %d attempts: %w", c.attempts, lastErr)
}

// logger is the task's logger (request_id, correlation_id, event_id) inside
// the worker, else the Crediter's.
func (c *Crediter) logger(ctx context.Context) *slog.Logger {
	if _, ok := queue.EnvelopeFrom(ctx); ok {
		return queue.LoggerFrom(ctx)
	}
	return c.log
}
