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
	less := func(at time.Time, id int64, c ports.DeliveredCursor) int {
		return cmp.Or(at.Compare(c.DeliveredAt), cmp.Compare(id, c.ID))
	}
	out := []outbox.Event{}
	for _, ev := range s.rows {
		if ev.Status != outbox.Delivered || ev.DeliveredAt == nil || ev.DeliveredAt.Before(from) {
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
	return out[:min(len(out), limit)], nil
}
