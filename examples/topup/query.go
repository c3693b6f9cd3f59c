package topup

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// LedgerPageSize is how many ledger entries GET /wallets/me returns,
// newest first.
const LedgerPageSize = 50

// OrderView is the JSON of an order (POST and GET /topups).
type OrderView struct {
	TopupID     string    `json:"topup_id"`
	AgentID     string    `json:"agent_id"`
	Status      string    `json:"status"`
	AmountCents int64     `json:"amount_cents"`
	Channel     Channel   `json:"channel"`
	PayURL      string    `json:"pay_url"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// WalletView is the JSON of GET /wallets/me.
type WalletView struct {
	AgentID       string            `json:"agent_id"`
	BalanceCents  int64             `json:"balance_cents"`
	Version       int64             `json:"version"`
	LedgerEntries []LedgerEntryView `json:"ledger_entries"`
}

// LedgerEntryView is one credit in WalletView.
type LedgerEntryView struct {
	ID          int64     `json:"id"`
	OrderID     string    `json:"order_id"`
	AmountCents int64     `json:"amount_cents"`
	CreatedAt   time.Time `json:"created_at"`
}

func orderView(o *Order) OrderView {
	return OrderView{
		TopupID: o.ID, AgentID: o.AgentID, Status: o.Status.String(), AmountCents: o.AmountCents,
		Channel: o.Channel, PayURL: o.PayURL, CreatedAt: o.CreatedAt.UTC(), UpdatedAt: o.UpdatedAt.UTC(),
	}
}

// Order returns order id: any order for RoleAdmin, the actor's own for
// RoleAgent; without either role ErrForbidden, before the lookup. For an
// agent, another agent's order is ErrNotFound exactly like a missing one:
// the agent may read orders, an order id addresses the agent's own
// orders, and a 403 there would confirm that the id exists.
func (s *Service) Order(ctx context.Context, actor Actor, id string) (OrderView, error) {
	if err := actor.require(RoleAgent, RoleAdmin); err != nil {
		return OrderView{}, err
	}
	var o Order
	q := s.db.NewSelect().Model(&o).Where("id = ?", id)
	if !actor.HasRole(RoleAdmin) {
		q = q.Where("agent_id = ?", actor.Subject)
	}
	err := q.Limit(1).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return OrderView{}, ErrNotFound
	case err != nil:
		return OrderView{}, fmt.Errorf("topup: read order: %w", err)
	}
	return orderView(&o), nil
}

// Wallet returns the actor's wallet and its newest LedgerPageSize ledger
// entries: a zero wallet until the first credit. The balance and the
// entries are read in one snapshot, so they agree. Only RoleAgent has a
// wallet: anyone else is ErrForbidden, never a fake zero wallet.
func (s *Service) Wallet(ctx context.Context, actor Actor) (WalletView, error) {
	if err := actor.require(RoleAgent); err != nil {
		return WalletView{}, err
	}
	view := WalletView{AgentID: actor.Subject, LedgerEntries: []LedgerEntryView{}}
	var entries []LedgerEntry
	opts := &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	err := s.db.RunInTx(ctx, opts, func(ctx context.Context, tx bun.Tx) error {
		var w Wallet
		switch err := tx.NewSelect().Model(&w).Where("agent_id = ?", actor.Subject).Limit(1).Scan(ctx); {
		case err == nil:
			view.BalanceCents, view.Version = w.BalanceCents, w.Version
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("topup: read wallet: %w", err)
		}
		if err := tx.NewSelect().Model(&entries).Where("agent_id = ?", actor.Subject).
			OrderExpr("id DESC").Limit(LedgerPageSize).Scan(ctx); err != nil {
			return fmt.Errorf("topup: read ledger: %w", err)
		}
		return nil
	})
	if err != nil {
		return WalletView{}, err
	}
	for _, e := range entries {
		view.LedgerEntries = append(view.LedgerEntries, LedgerEntryView{
			ID: e.ID, OrderID: e.OrderID, AmountCents: e.AmountCents, CreatedAt: e.CreatedAt.UTC(),
		})
	}
	return view, nil
}
