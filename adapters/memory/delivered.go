package memory

import (
	"cmp"
	"slices"
	"time"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

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
