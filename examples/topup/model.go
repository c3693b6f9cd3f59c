package topup

import (
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/pgidem"
)

// Status is an order's state (ex_topup_order.status).
type Status int16

// Order states; see the package doc for the moves.
const (
	// StatusCreated: the order exists and waits for its credit.
	StatusCreated Status = 1
	// StatusCredited: the wallet holds the amount (terminal).
	StatusCredited Status = 2
)

// String returns the status name used in responses.
func (s Status) String() string {
	switch s {
	case StatusCreated:
		return "created"
	case StatusCredited:
		return "credited"
	}
	return "unknown"
}

// allowed is the order state machine, for pgidem.Transition.
func allowed(from, to int16) bool {
	return Status(from) == StatusCreated && Status(to) == StatusCredited
}

// Channel is a payment channel.
type Channel string

// Payment channels accepted by POST /topups.
const (
	ChannelWeChat Channel = "wechat"
	ChannelAlipay Channel = "alipay"
)

// Table names; every object of this domain starts with ex_topup_.
const (
	tableOrder  = "ex_topup_order"
	tableWallet = "ex_topup_wallet"
)

// Order is a row of ex_topup_order. It embeds the idempotency record of
// the create command, so the key commits or rolls back with the order.
type Order struct {
	bun.BaseModel `bun:"table:ex_topup_order"`

	ID          string    `bun:"id,pk"`
	AgentID     string    `bun:"agent_id,notnull"`
	AmountCents int64     `bun:"amount_cents,notnull"`
	Channel     Channel   `bun:"channel,notnull"`
	Status      Status    `bun:"status,notnull"`
	PayURL      string    `bun:"pay_url,notnull"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
	UpdatedAt   time.Time `bun:"updated_at,notnull"`
	pgidem.Record
}

// Wallet is a row of ex_topup_wallet.
type Wallet struct {
	bun.BaseModel `bun:"table:ex_topup_wallet"`

	AgentID      string    `bun:"agent_id,pk"`
	BalanceCents int64     `bun:"balance_cents,notnull"`
	Version      int64     `bun:"version,notnull"`
	CreatedAt    time.Time `bun:"created_at,notnull"`
	UpdatedAt    time.Time `bun:"updated_at,notnull"`
}

// LedgerEntry is a row of ex_topup_ledger: one credit of one order.
type LedgerEntry struct {
	bun.BaseModel `bun:"table:ex_topup_ledger"`

	ID          int64     `bun:"id,pk,autoincrement"`
	AgentID     string    `bun:"agent_id,notnull"`
	OrderID     string    `bun:"order_id,notnull"`
	AmountCents int64     `bun:"amount_cents,notnull"`
	EventID     string    `bun:"event_id,notnull"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
}

// Created is the payload of the topup.created event (payload_version 1).
type Created struct {
	TopupID     string  `json:"topup_id"`
	AgentID     string  `json:"agent_id"`
	AmountCents int64   `json:"amount_cents"`
	Channel     Channel `json:"channel"`
}

// Event and operation names.
const (
	// EventCreated is the outbox event type appended with every new order.
	EventCreated = "topup.created"
	// OperationCreate is the idempotency scope's operation of POST /topups.
	OperationCreate = "topup.create"
	// AggregateType is the outbox aggregate and resource type of orders.
	AggregateType = "topup_order"
)
