package outbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

const testEventID = "0b7e6f2a-5c1d-4e8f-9a3b-2c4d6e8f0a1b"

type topupCreated struct {
	OrderID string `json:"order_id"`
	Amount  int64  `json:"amount"`
}

func validParams() outbox.NewParams {
	return outbox.NewParams{
		EventID:        testEventID,
		EventType:      "topup.created",
		PayloadVersion: 1,
		AggregateType:  "topup_order",
		AggregateID:    "42",
		ResourceType:   "wallet",
		ResourceID:     "w-7",
		BusinessKey:    "TP20300102-0001",
		RequestID:      "req-1",
		CorrelationID:  "corr-1",
		Payload:        topupCreated{OrderID: "42", Amount: 1000},
		Now:            t0,
	}
}

func newEvent(t *testing.T) outbox.Event {
	t.Helper()

	ev, err := outbox.New(validParams())
	require.NoError(t, err)
	return ev
}

// delivering returns an event claimed by owner "a" at t0 for a minute.
func delivering(t *testing.T) outbox.Event {
	t.Helper()

	ev, err := outbox.Claim(newEvent(t), "a", t0, time.Minute)
	require.NoError(t, err)
	return ev
}
