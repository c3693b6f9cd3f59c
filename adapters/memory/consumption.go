package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

var (
	_ ports.ConsumptionRecorder     = (*OutboxStore)(nil)
	_ ports.OutboxConsumptionReader = (*OutboxStore)(nil)
)

// RecordConsumed implements ports.ConsumptionRecorder.
func (s *OutboxStore) RecordConsumed(_ context.Context, cs []ports.Consumption) error {
	for _, c := range cs {
		if _, err := uuid.Parse(c.EventID); err != nil {
			return fmt.Errorf("record consumption: event id %q is not a uuid", c.EventID)
		}
		if strings.TrimSpace(c.Consumer) == "" || len(c.Consumer) > 100 {
			return fmt.Errorf("record consumption of event %s: consumer name must be 1..100 characters", c.EventID)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("record consumption"); err != nil {
		return err
	}
	if s.consumed == nil {
		s.consumed = map[string]map[string]time.Time{}
	}
	for _, c := range cs {
		by := s.consumed[c.EventID]
		if by == nil {
			by = map[string]time.Time{}
			s.consumed[c.EventID] = by
		}
		if _, ok := by[c.Consumer]; !ok {
			by[c.Consumer] = c.At
		}
		if c.Ordered {
			s.unpark(c.EventID)
		}
	}
	return nil
}

// unconsumed is the pgoutbox rule: Delivered, no evidence, no open failure.
func (s *OutboxStore) unconsumed(ev *outbox.Event) bool {
	return ev.Status == outbox.Delivered && len(s.consumed[ev.EventID]) == 0 && s.open(ev.EventID) < 0
}

// DeliveredUnconsumed implements ports.OutboxConsumptionReader.
func (s *OutboxStore) DeliveredUnconsumed(_ context.Context, after ports.DeliveredCursor, until time.Time, limit int) ([]outbox.Event, error) {
	if limit < 1 || limit > 1000 {
		return nil, fmt.Errorf("read unconsumed outbox events: limit %d outside 1..1000", limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("read unconsumed outbox events"); err != nil {
		return nil, err
	}
	return s.deliveredPage(after, limit, func(ev *outbox.Event) bool {
		return s.unconsumed(ev) && !ev.DeliveredAt.After(until)
	}), nil
}

// Unconsumed implements ports.OutboxConsumptionReader.
func (s *OutboxStore) Unconsumed(_ context.Context, eventIDs []string) ([]outbox.Event, error) {
	if len(eventIDs) > 1000 {
		return nil, fmt.Errorf("read unconsumed outbox events: %d ids; pass at most 1000", len(eventIDs))
	}
	for _, id := range eventIDs {
		if _, err := uuid.Parse(id); err != nil {
			return nil, fmt.Errorf("read unconsumed outbox events: event id %q is not a uuid", id)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("read unconsumed outbox events"); err != nil {
		return nil, err
	}
	out := []outbox.Event{}
	for _, id := range eventIDs {
		if row, ok := s.byUUID[id]; ok && s.unconsumed(s.rows[row]) {
			out = append(out, clone(*s.rows[row]))
		}
	}
	slices.SortFunc(out, func(a, b outbox.Event) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// ReplayedUnconsumed implements ports.OutboxConsumptionReader.
func (s *OutboxStore) ReplayedUnconsumed(_ context.Context, since time.Time, limit int) ([]outbox.Event, error) {
	if limit < 1 || limit > 1000 {
		return nil, fmt.Errorf("read replayed, unconsumed outbox events: limit %d outside 1..1000", limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("read replayed, unconsumed outbox events"); err != nil {
		return nil, err
	}
	out := []outbox.Event{}
	seen := map[string]bool{}
	for _, f := range s.failures {
		row, ok := s.byUUID[f.EventID]
		if f.ResolvedAt == nil || f.ResolvedAt.Before(since) || seen[f.EventID] || !ok || !s.unconsumed(s.rows[row]) {
			continue
		}
		seen[f.EventID] = true
		out = append(out, clone(*s.rows[row]))
	}
	slices.SortFunc(out, func(a, b outbox.Event) int { return cmp.Compare(a.ID, b.ID) })
	return out[:min(len(out), limit)], nil
}

// ConsumedBy reports whether consumer recorded eventID (for tests).
func (s *OutboxStore) ConsumedBy(eventID, consumer string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.consumed[eventID][consumer]
	return ok
}
