package pgoutbox

import (
	"context"
	"fmt"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/ports"
)

// blockersSQL are the ordered events that hold their aggregate for an
// operator: Failed ones (ix_outbox_event_failed) and Delivered ones with
// an open consumer failure (uq_outbox_consumer_failure_open). Either is
// the head of its aggregate: it was claimed, so its predecessor was done.
const blockersSQL = `WITH blocker AS (
	SELECT e.id, e.event_id, e.event_type, e.status, e.aggregate_type, e.aggregate_id,
		'` + ports.StuckFailed + `' AS reason, e.updated_at AS since, coalesce(e.last_error_code, '') AS code
	FROM tb_outbox_event AS e WHERE e.status = 4 AND e.ordered
	UNION ALL
	SELECT e.id, e.event_id, e.event_type, e.status, e.aggregate_type, e.aggregate_id,
		'` + ports.StuckConsumerFailed + `', f.failed_at, f.error_code
	FROM tb_outbox_consumer_failure AS f JOIN tb_outbox_event AS e ON e.event_id = f.event_id
	WHERE f.resolved_at IS NULL AND e.status = 3 AND e.ordered
)`

// waitingSQL counts the Pending ordered events behind blocker b
// (ix_outbox_event_ordered).
const waitingSQL = `(SELECT count(*) FROM tb_outbox_event AS s
	WHERE s.ordered AND s.aggregate_type = b.aggregate_type AND s.aggregate_id = b.aggregate_id AND s.id > b.id AND s.status = 1)`

const stuckSQL = blockersSQL + `
SELECT b.event_id, b.event_type, b.status, b.aggregate_type, b.aggregate_id, b.reason, b.since, b.code, w.n
FROM blocker AS b CROSS JOIN LATERAL (SELECT ` + waitingSQL + ` AS n) AS w
WHERE w.n > 0
ORDER BY b.since, b.id
LIMIT ?`

const stuckCountSQL = blockersSQL + `
SELECT count(*) FROM blocker AS b WHERE ` + waitingSQL + ` > 0`

// StuckAggregates implements ports.OutboxOperatorStore.
func (s *Store) StuckAggregates(ctx context.Context, limit int) ([]ports.StuckAggregate, error) {
	if limit < 1 || limit > maxListLimit {
		return nil, fmt.Errorf("list stuck aggregates: limit %d outside 1..%d", limit, maxListLimit)
	}
	rows, err := s.db.QueryContext(ctx, stuckSQL, limit)
	if err != nil {
		return nil, fmt.Errorf("list stuck aggregates: %w", pgerr.Translate(err))
	}
	defer rows.Close()
	var out []ports.StuckAggregate
	for rows.Next() {
		var a ports.StuckAggregate
		if err := rows.Scan(&a.Blocker.EventID, &a.Blocker.EventType, &a.Blocker.Status, &a.AggregateType, &a.AggregateID,
			&a.Reason, &a.Since, &a.Blocker.LastErrorCode, &a.Waiting); err != nil {
			return nil, fmt.Errorf("list stuck aggregates: %w", err)
		}
		a.Blocker.AggregateType, a.Blocker.AggregateID, a.Blocker.Ordered = a.AggregateType, a.AggregateID, true
		a.Since = a.Since.UTC()
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list stuck aggregates: %w", pgerr.Translate(err))
	}
	return out, nil
}
