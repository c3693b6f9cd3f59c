package pgoutbox

import (
	"context"
	"fmt"
	"time"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

var _ ports.OutboxDeliveredReader = (*Store)(nil)

// DeliveredSince implements ports.OutboxDeliveredReader. It runs only
// after a Redis failover, so it reads without an index of its own (a scan
// of the delivered rows kept for retention).
func (s *Store) DeliveredSince(ctx context.Context, from time.Time, after ports.DeliveredCursor, limit int) ([]outbox.Event, error) {
	if limit < 1 || limit > maxListLimit {
		return nil, fmt.Errorf("read delivered outbox events: limit %d outside 1..%d", limit, maxListLimit)
	}
	var rows []outboxRow
	q := s.db.NewSelect().Model(&rows).
		Where("status = ?", int16(outbox.Delivered)).
		Where("delivered_at >= ?", from).
		OrderExpr("delivered_at, id").Limit(int64(limit))
	if !after.DeliveredAt.IsZero() {
		q = q.Where("(delivered_at, id) > (?, ?)", after.DeliveredAt, after.ID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("read delivered outbox events: %w", pgerr.Translate(err))
	}
	return toEvents(rows), nil
}
