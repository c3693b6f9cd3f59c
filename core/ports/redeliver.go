package ports

import (
	"context"
	"time"

	"github.com/july/template/core/outbox"
)

// DeliveredCursor is where a DeliveredSince page ended: the last event's
// delivered_at and id. The zero value starts at the window's beginning.
type DeliveredCursor struct {
	DeliveredAt time.Time
	ID          int64
}

// OutboxDeliveredReader reads recently delivered events, for a relay that
// must publish them again because the queue may have lost them (a Redis
// failover that dropped acknowledged writes).
type OutboxDeliveredReader interface {
	// DeliveredSince returns up to limit (1..500) Delivered events with
	// delivered_at >= from, after the cursor, ordered by (delivered_at,
	// id); fewer than limit means the window is exhausted.
	DeliveredSince(ctx context.Context, from time.Time, after DeliveredCursor, limit int) ([]outbox.Event, error)
}
