package topup

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/http/httpx"
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

// get is GET /api/v1/topups/:id. Another agent's order answers exactly
// like a missing one.
func (a *API) get(c echo.Context) error {
	ctx := c.Request().Context()
	agent, ok := agentID(c)
	if !ok {
		return echo.ErrUnauthorized // the group's auth middleware runs first
	}
	id, err := httpx.PathUUID(c, "id")
	if err != nil {
		return err
	}
	var o Order
	err = a.db.NewSelect().Model(&o).
		Where("id = ?", id).Where("agent_id = ?", agent).
		Limit(1).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return fmt.Errorf("topup: read order: %w", err)
	}
	return c.JSON(http.StatusOK, orderView(&o))
}

// wallet is GET /api/v1/wallets/me: a zero wallet until the first credit.
func (a *API) wallet(c echo.Context) error {
	ctx := c.Request().Context()
	agent, ok := agentID(c)
	if !ok {
		return echo.ErrUnauthorized
	}
	view := WalletView{AgentID: agent, LedgerEntries: []LedgerEntryView{}}
	var entries []LedgerEntry
	// One snapshot, so the balance and the entries agree.
	opts := &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	err := a.db.RunInTx(ctx, opts, func(ctx context.Context, tx bun.Tx) error {
		var w Wallet
		switch err := tx.NewSelect().Model(&w).Where("agent_id = ?", agent).Limit(1).Scan(ctx); {
		case err == nil:
			view.BalanceCents, view.Version = w.BalanceCents, w.Version
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("topup: read wallet: %w", err)
		}
		if err := tx.NewSelect().Model(&entries).Where("agent_id = ?", agent).
			OrderExpr("id DESC").Limit(LedgerPageSize).Scan(ctx); err != nil {
			return fmt.Errorf("topup: read ledger: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, e := range entries {
		view.LedgerEntries = append(view.LedgerEntries, LedgerEntryView{
			ID: e.ID, OrderID: e.OrderID, AmountCents: e.AmountCents, CreatedAt: e.CreatedAt.UTC(),
		})
	}
	return c.JSON(http.StatusOK, view)
}
