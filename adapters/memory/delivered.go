package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

var _ ports.OutboxDeliveredReader = (*OutboxStore)(nil)

// DeliveredSince implements ports.OutboxDeliveredReader.
func (s *OutboxStore) DeliveredSince(_ context.Context, from time.Time, after ports.DeliveredCursor, limit int) ([]outbox.Event, error) {
	if limit < 1 || limit > 500 {
		return nil, fmt.Errorf("read delivered outbox events: limit %d outside 1..500", limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("read delivered outbox events"); err != nil {
		return nil, err
	}
	return s.deliveredPage(after, limit, func(ev *outbox.Event) bool {
		return ev.Status == outbox.Delivered && ev.DeliveredAt != nil && !ev.DeliveredAt.Before(from)
	}), nil
}

// deliveredPage returns up to limit events that keep accepts, after the
// cursor, in (delivered_at, id) order. Callers hold s.mu; keep sees only
// events with a delivered_at.
func (s *OutboxStore) deliveredPage(after ports.DeliveredCursor, limit int, keep func(*outbox.Event) bool) []outbox.Event {
	less := func(at time.Time, id int64, c ports.DeliveredCursor) int {
		return cmp.Or(at.Compare(c.DeliveredAt), cmp.Compare(id, c.ID))
	}
	out := []outbox.Event{}
	for _, ev := range s.rows {
		if ev.DeliveredAt == nil || !keep(ev) {
			continue
		}
		if !after.DeliveredAt.IsZero() && less(*ev.DeliveredAt, ev.ID, after) <= 0 {
			continue
		}
		out = append(out, clone(*ev))
	}
	slices.SortFunc(out, func(a, b outbox.Event) int {
		return less(*a.DeliveredAt, a.ID, ports.DeliveredCursor{DeliveredAt: *b.DeliveredAt, ID: b.ID})
	})
	return out[:min(len(out), limit)]
}
