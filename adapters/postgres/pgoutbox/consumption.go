package pgoutbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

var (
	_ ports.ConsumptionRecorder     = (*Store)(nil)
	_ ports.OutboxConsumptionReader = (*Store)(nil)
)

// maxConsumer is tb_outbox_consumption.consumer's length.
const maxConsumer = 100

// RecordConsumption writes the consumption record of eventID by consumer
// through db, the consumer's own transaction, and reports whether it is
// the first: false means this consumer already ran the event (a duplicate
// delivery), so the caller skips its effect and commits nothing new. Call
// it first in the transaction that writes the effect; a concurrent
// duplicate waits on the record's key until the first commits or rolls
// back, which makes the effect exactly once.
//
//	first, err := pgoutbox.RecordConsumption(ctx, tx, env.EventID, "wallet-credit", now)
//	if err != nil || !first {
//		return err
//	}
func RecordConsumption(ctx context.Context, db bun.IDB, eventID, consumer string, at time.Time) (bool, error) {
	if err := checkConsumption(eventID, consumer); err != nil {
		return false, err
	}
	res, err := db.NewRaw(`INSERT INTO tb_outbox_consumption (event_id, consumer, consumed_at) VALUES (?, ?, ?)
		ON CONFLICT (event_id, consumer) DO NOTHING`, eventID, consumer, at).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("record consumption of event %s by %s: %w", eventID, consumer, pgerr.Translate(err))
	}
	n, err := pgerr.Affected(res)
	return n == 1, err
}

func checkConsumption(eventID, consumer string) error {
	if _, err := uuid.Parse(eventID); err != nil {
		return fmt.Errorf("record consumption: event id %q is not a uuid; pass the envelope's event_id", eventID)
	}
	if strings.TrimSpace(consumer) == "" || len(consumer) > maxConsumer {
		return fmt.Errorf("record consumption of event %s: consumer name must be 1..%d characters", eventID, maxConsumer)
	}
	return nil
}

// consumedSQL is RecordConsumed's INSERT (see asyncWhere).
const consumedSQL = `INSERT INTO tb_outbox_consumption (event_id, consumer, consumed_at)
	SELECT u.event_id, u.consumer, u.consumed_at
	FROM unnest(?::uuid[], ?::varchar[], ?::timestamptz[]) AS u(event_id, consumer, consumed_at)` + asyncWhere + `
	ON CONFLICT (event_id, consumer) DO NOTHING`

// consumedWakeSQL is consumedSQL for a batch holding an ordered event: the
// record lets the next event of its aggregate go, so it makes that event
// due again at its due time if ParkBlocked parked it, and notifies the
// relays' channel (adapters/postgres.OutboxChannel) on commit, as an
// outbox insert does, instead of leaving the next event to the poll.
const consumedWakeSQL = `WITH rec AS (` + consumedSQL + `), unpark AS (
	UPDATE tb_outbox_event AS s SET next_attempt_at = GREATEST(s.created_at, s.not_before)
	FROM (SELECT (SELECT n.id FROM tb_outbox_event AS n
			WHERE n.ordered AND n.aggregate_type = e.aggregate_type AND n.aggregate_id = e.aggregate_id AND n.id > e.id
			ORDER BY n.id LIMIT 1) AS id
		FROM tb_outbox_event AS e WHERE e.event_id = ANY(?::uuid[]) AND e.ordered) AS nx
	WHERE s.id = nx.id AND s.status = 1 AND s.next_attempt_at > GREATEST(s.created_at, s.not_before)
)
SELECT pg_notify('outbox_event', '')`

// RecordConsumed implements ports.ConsumptionRecorder with one INSERT for
// the whole batch; with Config.AsynchronousCommit it does not wait for the
// WAL flush (a record lost in a database crash makes the reconciler
// publish the event again, which the consumer's own record absorbs).
func (s *Store) RecordConsumed(ctx context.Context, cs []ports.Consumption) error {
	if len(cs) == 0 {
		return nil
	}
	ids := make([]string, len(cs))
	names := make([]string, len(cs))
	ats := make([]time.Time, len(cs))
	ordered := false
	for i, c := range cs {
		if err := checkConsumption(c.EventID, c.Consumer); err != nil {
			return err
		}
		ids[i], names[i], ats[i] = c.EventID, c.Consumer, c.At
		ordered = ordered || c.Ordered
	}
	q, args := s.q.consumed, []any{pgdialect.Array(ids), pgdialect.Array(names), pgdialect.Array(ats)}
	if ordered {
		q, args = s.q.consumedWake, append(args, pgdialect.Array(ids))
	}
	_, err := s.db.NewRaw(q, args...).Exec(ctx)
	if err != nil {
		return fmt.Errorf("record consumption of %d events: %w", len(cs), pgerr.Translate(err))
	}
	return nil
}

// unconsumedSQL is what "awaits its consumer" means, for both readers.
const unconsumedSQL = `?TableAlias.status = 3
	AND NOT EXISTS (SELECT 1 FROM tb_outbox_consumption c WHERE c.event_id = ?TableAlias.event_id)
	AND NOT EXISTS (SELECT 1 FROM tb_outbox_consumer_failure f WHERE f.event_id = ?TableAlias.event_id AND f.resolved_at IS NULL)`

// DeliveredUnconsumed implements ports.OutboxConsumptionReader. It walks
// ix_outbox_event_delivered_at from the cursor, so a pass reads the
// deliveries since the last one, whatever the table holds.
func (s *Store) DeliveredUnconsumed(ctx context.Context, after ports.DeliveredCursor, until time.Time, limit int) ([]outbox.Event, error) {
	if limit < 1 || limit > 1000 {
		return nil, fmt.Errorf("read unconsumed outbox events: limit %d outside 1..1000", limit)
	}
	var rows []outboxRow
	q := s.db.NewSelect().Model(&rows).
		Where(unconsumedSQL).
		Where("delivered_at <= ?", until).
		OrderExpr("delivered_at, id").Limit(int64(limit))
	if !after.DeliveredAt.IsZero() {
		q = q.Where("(delivered_at, id) > (?, ?)", after.DeliveredAt, after.ID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("read unconsumed outbox events: %w", pgerr.Translate(err))
	}
	return toEvents(rows), nil
}

// ReplayedUnconsumed implements ports.OutboxConsumptionReader. It reads
// the failure table by resolved_at without an index of its own: the table
// holds only consumer failures, few next to the events.
func (s *Store) ReplayedUnconsumed(ctx context.Context, since time.Time, limit int) ([]outbox.Event, error) {
	if limit < 1 || limit > 1000 {
		return nil, fmt.Errorf("read replayed, unconsumed outbox events: limit %d outside 1..1000", limit)
	}
	var rows []outboxRow
	err := s.db.NewSelect().Model(&rows).
		Where("event_id IN (SELECT r.event_id FROM tb_outbox_consumer_failure r WHERE r.resolved_at >= ?)", since).
		Where(unconsumedSQL).
		OrderExpr("id").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("read replayed, unconsumed outbox events: %w", pgerr.Translate(err))
	}
	return toEvents(rows), nil
}

// Unconsumed implements ports.OutboxConsumptionReader.
func (s *Store) Unconsumed(ctx context.Context, eventIDs []string) ([]outbox.Event, error) {
	if len(eventIDs) == 0 {
		return nil, nil
	}
	if len(eventIDs) > 1000 {
		return nil, fmt.Errorf("read unconsumed outbox events: %d ids; pass at most 1000", len(eventIDs))
	}
	for _, id := range eventIDs {
		if _, err := uuid.Parse(id); err != nil {
			return nil, fmt.Errorf("read unconsumed outbox events: event id %q is not a uuid", id)
		}
	}
	var rows []outboxRow
	err := s.db.NewSelect().Model(&rows).
		Where("event_id = ANY(?::uuid[])", pgdialect.Array(eventIDs)).
		Where(unconsumedSQL).
		OrderExpr("id").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("read unconsumed outbox events: %w", pgerr.Translate(err))
	}
	return toEvents(rows), nil
}
