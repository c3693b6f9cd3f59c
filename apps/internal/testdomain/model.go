package testdomain

import (
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/pgidem"
)

// Status is td_order.status.
type Status int16

// Order states: the consumer moves created -> applied once.
const (
	StatusCreated Status = 1
	StatusApplied Status = 2
)

func (s Status) String() string {
	return map[Status]string{StatusCreated: "created", StatusApplied: "applied"}[s]
}

const tableOrder = "td_order"

// Order is a row of td_order; it embeds the create's idempotency record,
// so the key commits or rolls back with the order.
type Order struct {
	bun.BaseModel `bun:"table:td_order"`

	ID        string    `bun:"id,pk"`
	Owner     string    `bun:"owner,notnull"`
	Amount    int64     `bun:"amount,notnull"`
	Note      string    `bun:"note,notnull"`
	Status    Status    `bun:"status,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
	UpdatedAt time.Time `bun:"updated_at,notnull"`
	pgidem.Record
}

// Created is the payload of EventCreated (payload_version 1).
type Created struct {
	OrderID string `json:"order_id"`
	Owner   string `json:"owner"`
	Amount  int64  `json:"amount"`
}

// OrderView is the JSON of an order (POST and GET).
type OrderView struct {
	OrderID   string    `json:"order_id"`
	Owner     string    `json:"owner"`
	Amount    int64     `json:"amount"`
	Note      string    `json:"note"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
}

func orderView(o *Order) OrderView {
	return OrderView{OrderID: o.ID, Owner: o.Owner, Amount: o.Amount, Note: o.Note,
		Status: o.Status.String(), CreatedAt: o.CreatedAt.UTC()}
}
