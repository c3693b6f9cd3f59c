package memory

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// OutboxStore is an in-memory ports.OutboxStore. SetDown simulates an
// outage of the database behind it.
type OutboxStore struct {
	outage
	mu     sync.Mutex
	nextID int64
	rows   map[int64]*outbox.Event
	byUUID map[string]int64
	// failures are the consumer failures, open and resolved, oldest first.
	failures []outbox.ConsumerFailureRecord
	// consumed is the consumption evidence: event id -> consumer -> at.
	consumed map[string]map[string]time.Time
}

var _ ports.OutboxStore = (*OutboxStore)(nil)

// NewOutboxStore returns an empty store.
func NewOutboxStore() *OutboxStore {
	return &OutboxStore{rows: map[int64]*outbox.Event{}, byUUID: map[string]int64{}}
}

// Append implements ports.OutboxWriter.
func (s *OutboxStore) Append(_ context.Context, events ...outbox.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("append outbox events"); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, ev := range events {
		if ev.Status != outbox.Pending || len(ev.Payload) == 0 {
			return fmt.Errorf("append outbox event %s: build events with outbox.New", ev.EventID)
		}
		if _, dup := s.byUUID[ev.EventID]; dup || seen[ev.EventID] {
			return fmt.Errorf("append outbox event %s: %w: event_id exists", ev.EventID, ports.ErrConflict)
		}
		seen[ev.EventID] = true
	}
	for _, ev := range events {
		s.nextID++
		ev.ID = s.nextID
		ev.Payload = slices.Clone(ev.Payload)
		s.rows[ev.ID] = &ev
		s.byUUID[ev.EventID] = ev.ID
	}
	return nil
}

// Claim implements ports.OutboxRelayStore.
func (s *OutboxStore) Claim(_ context.Context, p ports.ClaimParams) ([]outbox.Event, error) {
	if p.Limit < 1 {
		return nil, fmt.Errorf("claim outbox: limit %d below 1", p.Limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("claim outbox events"); err != nil {
		return nil, err
	}
	var due []*outbox.Event
	for _, ev := range s.rows {
		if ev.Status == outbox.Pending && !p.Now.Before(ev.NextAttemptAt) && s.ready(ev) {
			due = append(due, ev)
		}
	}
	slices.SortFunc(due, func(a, b *outbox.Event) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt), cmp.Compare(a.ID, b.ID))
	})
	out := []outbox.Event{}
	for _, ev := range due[:min(len(due), p.Limit)] {
		claimed, err := outbox.Claim(*ev, p.Owner, p.Now, p.LeaseFor)
		if err != nil {
			return nil, fmt.Errorf("claim outbox event %s: %w", ev.EventID, err)
		}
		*ev = claimed
		out = append(out, clone(claimed))
	}
	return out, nil
}

// ParkBlocked implements ports.OutboxRelayStore.
func (s *OutboxStore) ParkBlocked(_ context.Context, now, until time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, fmt.Errorf("park blocked ordered events: limit %d; pass 1 or more", limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("park blocked ordered events"); err != nil {
		return 0, err
	}
	var blocked []*outbox.Event
	for _, a := range s.stuckAt(now.Add(-ports.ParkUnconsumedAfter)) {
		head := s.byUUID[a.Blocker.EventID]
		for _, ev := range s.rows {
			if ev.Ordered && ev.Status == outbox.Pending && !now.Before(ev.NextAttemptAt) && ev.ID > head &&
				ev.AggregateType == a.AggregateType && ev.AggregateID == a.AggregateID {
				blocked = append(blocked, ev)
			}
		}
	}
	slices.SortFunc(blocked, func(a, b *outbox.Event) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt), cmp.Compare(a.ID, b.ID))
	})
	blocked = blocked[:min(len(blocked), limit)]
	for _, ev := range blocked {
		ev.NextAttemptAt = until
	}
	return len(blocked) + s.parkBehindDelayed(now, limit-len(blocked)), nil
}

// parkBehindDelayed is pgoutbox's parkDelayedSQL: the Pending ordered
// events behind the first delayed Pending ordered event of their aggregate
// take its not_before, lowest id first. Callers hold s.mu.
func (s *OutboxStore) parkBehindDelayed(now time.Time, limit int) int {
	type agg struct{ typ, id string }
	first := map[agg]*outbox.Event{}
	for _, ev := range s.rows {
		if ev.Ordered && ev.Status == outbox.Pending && ev.NotBefore.After(now) {
			k := agg{ev.AggregateType, ev.AggregateID}
			if f, ok := first[k]; !ok || ev.ID < f.ID {
				first[k] = ev
			}
		}
	}
	var behind []*outbox.Event
	for _, ev := range s.rows {
		head, ok := first[agg{ev.AggregateType, ev.AggregateID}]
		if ok && ev.Ordered && ev.Status == outbox.Pending && ev.ID > head.ID && ev.NotBefore.Before(head.NotBefore) {
			behind = append(behind, ev)
		}
	}
	slices.SortFunc(behind, func(a, b *outbox.Event) int { return cmp.Compare(a.ID, b.ID) })
	behind = behind[:max(min(len(behind), limit), 0)]
	for _, ev := range behind {
		head := first[agg{ev.AggregateType, ev.AggregateID}]
		ev.NotBefore = head.NotBefore
		if ev.NextAttemptAt.Before(head.NotBefore) {
			ev.NextAttemptAt = head.NotBefore
		}
	}
	return len(behind)
}

// unpark is pgoutbox's consumedWakeSQL: the next ordered event after the
// consumed ordered event eventID is due again at its due time when it
// was parked. Callers hold s.mu.
func (s *OutboxStore) unpark(eventID string) {
	id, ok := s.byUUID[eventID]
	if !ok || !s.rows[id].Ordered {
		return
	}
	if next := s.neighbour(s.rows[id], +1); next != nil && next.Status == outbox.Pending && next.NextAttemptAt.After(next.DueAt()) {
		next.NextAttemptAt = next.DueAt()
	}
}

// ready is pgoutbox's ordering rule (readySQL): an ordered event's
// predecessor, the previous ordered event of its aggregate, is gone or
// Delivered and consumed. Callers hold s.mu.
func (s *OutboxStore) ready(ev *outbox.Event) bool {
	if !ev.Ordered {
		return true
	}
	prev := s.neighbour(ev, -1)
	return prev == nil || (prev.Status == outbox.Delivered && len(s.consumed[prev.EventID]) > 0)
}

// neighbour returns the ordered event of ev's aggregate just before ev
// (dir -1, the predecessor the claim waits for) or just after it (dir +1),
// or nil. Callers hold s.mu.
func (s *OutboxStore) neighbour(ev *outbox.Event, dir int64) *outbox.Event {
	var best *outbox.Event
	for _, o := range s.rows {
		if o.Ordered && (o.ID-ev.ID)*dir > 0 && o.AggregateType == ev.AggregateType && o.AggregateID == ev.AggregateID &&
			(best == nil || (o.ID-best.ID)*dir < 0) {
			best = o
		}
	}
	return best
}

// Complete implements ports.OutboxRelayStore.
func (s *OutboxStore) Complete(_ context.Context, owner string, now time.Time, refs []ports.LeaseRef) ([]int64, error) {
	return s.each(refs, func(ev outbox.Event, ref ports.LeaseRef) (outbox.Event, error) {
		ev, err := outbox.Complete(ev, owner, ref.Token, now)
		return ev, err
	})
}

// Fail implements ports.OutboxRelayStore.
func (s *OutboxStore) Fail(_ context.Context, owner string, now time.Time, items []ports.FailItem) ([]int64, error) {
	refs := make([]ports.LeaseRef, len(items))
	byID := make(map[int64]outbox.FailureDecision, len(items))
	for i, it := range items {
		refs[i], byID[it.Ref.ID] = it.Ref, it.Decision
	}
	return s.each(refs, func(ev outbox.Event, ref ports.LeaseRef) (outbox.Event, error) {
		return outbox.Fail(ev, owner, ref.Token, byID[ref.ID], now)
	})
}

// Renew implements ports.OutboxRelayStore.
func (s *OutboxStore) Renew(_ context.Context, owner string, now time.Time, leaseFor time.Duration, refs []ports.LeaseRef) ([]int64, error) {
	return s.each(refs, func(ev outbox.Event, ref ports.LeaseRef) (outbox.Event, error) {
		return outbox.Renew(ev, owner, ref.Token, now, leaseFor)
	})
}

// Release implements ports.OutboxRelayStore.
func (s *OutboxStore) Release(_ context.Context, owner string, now time.Time, refs []ports.LeaseRef) ([]int64, error) {
	return s.each(refs, func(ev outbox.Event, ref ports.LeaseRef) (outbox.Event, error) {
		if ev.Status != outbox.Delivering {
			return ev, &outbox.TransitionError{From: ev.Status, To: outbox.Pending}
		}
		l, err := ev.Lease.Release(owner, ref.Token)
		if err != nil {
			return ev, err
		}
		ev.Status, ev.Lease, ev.NextAttemptAt, ev.UpdatedAt = outbox.Pending, l, now, now
		return ev, nil
	})
}

// each applies fn to every referenced row under the lock. A row fn refuses
// (lease lost, wrong status, unknown id) is reported as lost and unchanged.
func (s *OutboxStore) each(refs []ports.LeaseRef, fn func(outbox.Event, ports.LeaseRef) (outbox.Event, error)) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("write %d outbox leases", len(refs)); err != nil {
		return nil, err
	}
	var lost []int64
	for _, ref := range refs {
		ev, ok := s.rows[ref.ID]
		if !ok {
			lost = append(lost, ref.ID)
			continue
		}
		next, err := fn(*ev, ref)
		if err != nil {
			lost = append(lost, ref.ID)
			continue
		}
		*ev = next
	}
	return lost, nil
}

// RecoverExpired implements ports.OutboxRelayStore with outbox.Recover,
// drawing each row's jitter from math/rand.
func (s *OutboxStore) RecoverExpired(_ context.Context, p ports.RecoverParams) (ports.RecoverResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var res ports.RecoverResult
	if err := s.down("recover expired outbox leases"); err != nil {
		return res, err
	}
	var expired []*outbox.Event
	for _, ev := range s.rows {
		if outbox.LeaseExpired(*ev, p.Now) {
			expired = append(expired, ev)
		}
	}
	slices.SortFunc(expired, func(a, b *outbox.Event) int { return a.Lease.ExpiresAt.Compare(b.Lease.ExpiresAt) })
	for _, ev := range expired[:min(len(expired), max(p.Limit, 0))] {
		rec, err := outbox.Recover(*ev, p.Policy, p.Now, rand.Float64())
		if err != nil {
			return res, fmt.Errorf("recover outbox event %s: %w", ev.EventID, err)
		}
		*ev = rec
		if rec.Status == outbox.Failed {
			res.Failed = append(res.Failed, ports.RecoveredFailure{ID: rec.ID, EventID: rec.EventID, EventType: rec.EventType, RetryCount: rec.RetryCount})
		} else {
			res.Requeued++
		}
	}
	return res, nil
}

// Get implements ports.OutboxOperatorStore.
func (s *OutboxStore) Get(_ context.Context, eventID string) (outbox.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("get outbox event %s", eventID); err != nil {
		return outbox.Event{}, err
	}
	id, ok := s.byUUID[eventID]
	if !ok {
		return outbox.Event{}, fmt.Errorf("get outbox event %s: %w", eventID, ports.ErrNotFound)
	}
	return clone(*s.rows[id]), nil
}

// List implements ports.OutboxOperatorStore.
func (s *OutboxStore) List(_ context.Context, f ports.OutboxFilter) ([]outbox.Event, error) {
	limit := cmp.Or(f.Limit, 50)
	if limit < 1 || limit > 500 {
		return nil, fmt.Errorf("list outbox: limit %d outside 1..500", f.Limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("list outbox events"); err != nil {
		return nil, err
	}
	out := []outbox.Event{}
	for _, ev := range s.rows {
		if (f.Status == 0 || ev.Status == f.Status) &&
			(f.EventType == "" || ev.EventType == f.EventType) &&
			(f.CorrelationID == "" || ev.CorrelationID == f.CorrelationID) &&
			(f.AggregateType == "" || ev.AggregateType == f.AggregateType) &&
			(f.AggregateID == "" || ev.AggregateID == f.AggregateID) {
			out = append(out, clone(*ev))
		}
	}
	slices.SortFunc(out, func(a, b outbox.Event) int { return cmp.Compare(b.ID, a.ID) })
	return out[:min(len(out), limit)], nil
}

// Replay implements ports.OutboxOperatorStore: the changes are staged
// and applied only when the audit record succeeds.
func (s *OutboxStore) Replay(_ context.Context, p ports.ReplayParams) (ports.ReplayResult, error) {
	if err := p.Request.Validate(); err != nil {
		return ports.ReplayResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("replay outbox events"); err != nil {
		return ports.ReplayResult{}, err
	}
	res := ports.ReplayResult{Skipped: map[string]string{}}
	staged := map[int64]outbox.Event{}
	for _, eid := range p.EventIDs {
		id, ok := s.byUUID[eid]
		if _, done := staged[id]; done {
			continue
		}
		if !ok {
			res.Skipped[eid] = "not found"
			continue
		}
		next, err := outbox.Replay(*s.rows[id], p.Request, p.Now, p.StuckAfter)
		if err != nil {
			res.Skipped[eid] = err.Error()
			continue
		}
		staged[id] = next
		res.Replayed = append(res.Replayed, eid)
	}
	if err := s.audit(p.Audit, res.Replayed, p.Now); err != nil {
		return ports.ReplayResult{}, err
	}
	for id, ev := range staged {
		*s.rows[id] = ev
	}
	return res, nil
}

// ReleaseLeases implements ports.OutboxOperatorStore.
func (s *OutboxStore) ReleaseLeases(_ context.Context, p ports.ReleaseParams) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("release outbox leases of %s", p.Owner); err != nil {
		return nil, err
	}
	var held []*outbox.Event
	for _, ev := range s.rows {
		if ev.Status == outbox.Delivering && (p.Owner == "" || ev.Lease.Owner == p.Owner) {
			held = append(held, ev)
		}
	}
	slices.SortFunc(held, func(a, b *outbox.Event) int { return cmp.Compare(a.ID, b.ID) })
	ids := make([]string, len(held))
	for i, ev := range held {
		ids[i] = ev.EventID
	}
	if err := s.audit(p.Audit, ids, p.Now); err != nil {
		return nil, err
	}
	for _, ev := range held {
		ev.Status, ev.NextAttemptAt, ev.UpdatedAt = outbox.Pending, p.Now, p.Now
		ev.Lease = lease.Lease{Token: ev.Lease.Token}
	}
	return ids, nil
}

// MarkConsumerFailed implements ports.ConsumerFailureStore.
func (s *OutboxStore) MarkConsumerFailed(_ context.Context, f ports.ConsumerFailure) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("record the consumer failure of outbox event %s", f.EventID); err != nil {
		return false, err
	}
	id, ok := s.byUUID[f.EventID]
	if !ok {
		return false, nil
	}
	rec, err := outbox.NewConsumerFailureRecord(*s.rows[id], f.Code, f.Message, f.At)
	if err != nil {
		return false, err
	}
	if i := s.open(f.EventID); i >= 0 {
		if s.failures[i].ReplayRequestedAt == nil {
			return false, nil
		}
		s.failures[i] = rec // failed again during its replay: the stamp goes
		return true, nil
	}
	s.failures = append(s.failures, rec)
	return true, nil
}

// OpenConsumerFailures implements ports.ConsumerFailureStore.
func (s *OutboxStore) OpenConsumerFailures(_ context.Context, f ports.ConsumerFailureFilter) ([]outbox.ConsumerFailureRecord, error) {
	limit := cmp.Or(f.Limit, 50)
	if limit < 1 || limit > 500 {
		return nil, fmt.Errorf("list consumer failures: limit %d outside 1..500", f.Limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("list consumer failures"); err != nil {
		return nil, err
	}
	var out []outbox.ConsumerFailureRecord
	for _, c := range s.failures {
		if c.Open() && (len(f.EventIDs) == 0 || slices.Contains(f.EventIDs, c.EventID)) && len(out) < limit {
			out = append(out, c)
		}
	}
	return out, nil
}

// RequestConsumerReplay implements ports.ConsumerFailureStore.
func (s *OutboxStore) RequestConsumerReplay(_ context.Context, p ports.ConsumerReplayParams) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("record a consumer replay"); err != nil {
		return nil, err
	}
	var stamped []string
	for _, id := range p.EventIDs {
		if i := s.open(id); i >= 0 && !slices.Contains(stamped, id) {
			stamped = append(stamped, id)
		}
	}
	if err := s.audit(p.Audit, stamped, p.Now); err != nil {
		return nil, err
	}
	for _, id := range stamped {
		i, at := s.open(id), p.Now
		s.failures[i].ReplayBatchID, s.failures[i].ReplayRequestedAt = p.BatchID, &at
	}
	return stamped, nil
}

// ResolveConsumerFailures implements ports.ConsumerFailureStore.
func (s *OutboxStore) ResolveConsumerFailures(_ context.Context, batchID string, eventIDs []string, now time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("resolve consumer failures"); err != nil {
		return 0, err
	}
	n := 0
	for _, id := range eventIDs {
		if i := s.open(id); i >= 0 && s.failures[i].ReplayRequestedAt != nil && s.failures[i].ReplayBatchID == batchID {
			at := now
			s.failures[i].ResolvedAt = &at
			n++
		}
	}
	return n, nil
}

// open returns the index of eventID's open failure, or -1. Callers hold s.mu.
func (s *OutboxStore) open(eventID string) int {
	for i, c := range s.failures {
		if c.EventID == eventID && c.Open() {
			return i
		}
	}
	return -1
}

// audit appends rec, when set, as an outbox.AuditEventType event, as the
// Postgres adapter's default audit writer does. Callers hold s.mu.
func (s *OutboxStore) audit(rec ports.AuditRecord, ids []string, now time.Time) error {
	if rec.Action == "" {
		return nil
	}
	rec.After = strings.Join(ids, ",")
	if rec.RequestID == "" {
		rec.RequestID = uuid.NewString()
	}
	ev, err := outbox.NewAuditEvent(outbox.AuditPayload(rec), uuid.NewString(), now)
	if err != nil {
		return fmt.Errorf("write audit record: %w", err)
	}
	s.nextID++
	ev.ID = s.nextID
	s.rows[ev.ID] = &ev
	s.byUUID[ev.EventID] = ev.ID
	return nil
}

// Stats implements ports.OutboxOperatorStore.
func (s *OutboxStore) Stats(_ context.Context, now time.Time) (ports.OutboxStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("count outbox events"); err != nil {
		return ports.OutboxStats{}, err
	}
	st := ports.OutboxStats{BacklogByType: map[string]int64{}, RetryHistogram: map[int]int64{}}
	var oldest, oldestDue time.Time
	for _, ev := range s.rows {
		if ev.Status == outbox.Pending && ev.NotBefore.After(now) {
			st.Scheduled++ // delayed, not yet due: not late, counted nowhere else
			continue
		}
		if ev.Status == outbox.Pending || ev.Status == outbox.Delivering {
			if due := ev.DueAt(); oldest.IsZero() || due.Before(oldest) {
				oldest = due
			}
		}
		switch ev.Status {
		case outbox.Pending:
			st.Pending++
			if !ev.NextAttemptAt.After(now) && (oldestDue.IsZero() || ev.NextAttemptAt.Before(oldestDue)) {
				oldestDue = ev.NextAttemptAt
			}
		case outbox.Delivering:
			st.Delivering++
			if outbox.LeaseExpired(*ev, now) {
				st.ExpiredLeases++
			}
		case outbox.Failed:
			st.Failed++
		}
		if ev.Status == outbox.Pending || ev.Status == outbox.Delivering {
			st.BacklogByType[ev.EventType]++
		}
		if ev.Status != outbox.Delivered {
			st.RetryHistogram[ev.RetryCount]++
		}
	}
	if !oldest.IsZero() && now.After(oldest) {
		st.OldestPendingAge = now.Sub(oldest)
	}
	if !oldestDue.IsZero() {
		st.OldestDueAge = now.Sub(oldestDue)
	}
	st.StuckAggregates = int64(len(s.stuckAt(now.Add(-ports.StuckUnconsumedAfter))))
	return st, nil
}

// StuckAggregates implements ports.OutboxOperatorStore.
func (s *OutboxStore) StuckAggregates(_ context.Context, now time.Time, limit int) ([]ports.StuckAggregate, error) {
	if limit < 1 || limit > 500 {
		return nil, fmt.Errorf("list stuck aggregates: limit %d outside 1..500", limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("list stuck aggregates"); err != nil {
		return nil, err
	}
	out := s.stuckAt(now.Add(-ports.StuckUnconsumedAfter))
	return out[:min(len(out), limit)], nil
}

// stuckAt is pgoutbox's stuckSQL: per aggregate with Pending ordered
// events, the predecessor of the first one, when it blocks (an unconsumed
// one when delivered before cutoff). Longest stuck first. Callers hold
// s.mu.
func (s *OutboxStore) stuckAt(cutoff time.Time) []ports.StuckAggregate {
	type agg struct{ typ, id string }
	first, waiting := map[agg]*outbox.Event{}, map[agg]int64{}
	for _, w := range s.rows {
		if w.Ordered && w.Status == outbox.Pending {
			k := agg{w.AggregateType, w.AggregateID}
			waiting[k]++
			if f := first[k]; f == nil || w.ID < f.ID {
				first[k] = w
			}
		}
	}
	var out []ports.StuckAggregate
	for k, w := range first {
		b := s.neighbour(w, -1)
		if b == nil {
			continue
		}
		a := ports.StuckAggregate{AggregateType: k.typ, AggregateID: k.id, Waiting: waiting[k],
			Blocker: outbox.Event{EventID: b.EventID, EventType: b.EventType, Status: b.Status,
				AggregateType: k.typ, AggregateID: k.id, Ordered: true}}
		i, consumed := s.open(b.EventID), len(s.consumed[b.EventID]) > 0
		switch {
		case b.Status == outbox.Failed:
			a.Reason, a.Since, a.Blocker.LastErrorCode = ports.StuckFailed, b.UpdatedAt, b.LastErrorCode
		case b.Status != outbox.Delivered || consumed:
			continue
		case i >= 0:
			a.Reason, a.Since, a.Blocker.LastErrorCode = ports.StuckConsumerFailed, s.failures[i].FailedAt, s.failures[i].Code
		case b.DeliveredAt != nil && b.DeliveredAt.Before(cutoff):
			a.Reason, a.Since = ports.StuckUnconsumed, *b.DeliveredAt
		default:
			continue
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(x, y ports.StuckAggregate) int {
		return cmp.Or(x.Since.Compare(y.Since), cmp.Compare(s.byUUID[x.Blocker.EventID], s.byUUID[y.Blocker.EventID]))
	})
	return out
}

// PurgeDelivered implements ports.OutboxOperatorStore.
func (s *OutboxStore) PurgeDelivered(_ context.Context, cutoff time.Time, limit int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("purge delivered outbox events"); err != nil {
		return 0, err
	}
	var old []*outbox.Event
	for _, ev := range s.rows {
		if ev.Status == outbox.Delivered && ev.DeliveredAt != nil && ev.DeliveredAt.Before(cutoff) && s.open(ev.EventID) < 0 && len(s.consumed[ev.EventID]) > 0 {
			old = append(old, ev)
		}
	}
	slices.SortFunc(old, func(a, b *outbox.Event) int { return a.DeliveredAt.Compare(*b.DeliveredAt) })
	old = old[:min(len(old), max(limit, 0))]
	for _, ev := range old {
		delete(s.consumed, ev.EventID)
		delete(s.byUUID, ev.EventID)
		delete(s.rows, ev.ID)
	}
	return len(old), nil
}

func clone(ev outbox.Event) outbox.Event {
	ev.Payload = slices.Clone(ev.Payload)
	if ev.DeliveredAt != nil {
		t := *ev.DeliveredAt
		ev.DeliveredAt = &t
	}
	return ev
}
