package pgoutbox

import (
	"context"
	"fmt"
	"time"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/ports"
)

// stuckSQL starts from the waiting side, the small set of Pending ordered
// rows: per aggregate its first one (and how many wait), then that row's
// predecessor (one backward probe of ix_outbox_event_ordered), which
// blocks when it is Failed, or Delivered without a consumption record and
// either with an open consumer failure or delivered before the cut-off.
// A predecessor that was consumed never blocks, whatever failure record a
// later duplicate delivery left. The memory store's stuck states the same
// rule in Go.
const stuckSQL = `WITH waiting AS (
	SELECT DISTINCT ON (w.aggregate_type, w.aggregate_id) w.id, w.aggregate_type, w.aggregate_id,
		count(*) OVER (PARTITION BY w.aggregate_type, w.aggregate_id) AS n
	FROM tb_outbox_event AS w WHERE w.status = 1 AND w.ordered
	ORDER BY w.aggregate_type, w.aggregate_id, w.id
), head AS (
	SELECT p.id, p.event_id, p.event_type, p.status, wt.aggregate_type, wt.aggregate_id, wt.n,
		coalesce(p.last_error_code, '') AS relay_code, p.updated_at, p.delivered_at,
		f.error_code AS failure_code, f.failed_at,
		EXISTS (SELECT 1 FROM tb_outbox_consumption AS c WHERE c.event_id = p.event_id) AS consumed
	FROM waiting AS wt
	CROSS JOIN LATERAL (
		SELECT p.id, p.event_id, p.event_type, p.status, p.last_error_code, p.updated_at, p.delivered_at
		FROM tb_outbox_event AS p
		WHERE p.ordered AND p.aggregate_type = wt.aggregate_type AND p.aggregate_id = wt.aggregate_id AND p.id < wt.id
		ORDER BY p.id DESC LIMIT 1
	) AS p
	LEFT JOIN tb_outbox_consumer_failure AS f ON f.event_id = p.event_id AND f.resolved_at IS NULL
), stuck AS (
	SELECT h.*,
		CASE WHEN h.status = 4 THEN '` + ports.StuckFailed + `'
			WHEN h.failure_code IS NOT NULL THEN '` + ports.StuckConsumerFailed + `'
			ELSE '` + ports.StuckUnconsumed + `' END AS reason,
		CASE WHEN h.status = 4 THEN h.updated_at WHEN h.failure_code IS NOT NULL THEN h.failed_at ELSE h.delivered_at END AS since,
		CASE WHEN h.status = 4 THEN h.relay_code ELSE coalesce(h.failure_code, '') END AS code
	FROM head AS h
	WHERE h.status = 4 OR (h.status = 3 AND NOT h.consumed AND (h.failure_code IS NOT NULL OR h.delivered_at < ?))
)`

const stuckListSQL = stuckSQL + `
SELECT event_id, event_type, status, aggregate_type, aggregate_id, reason, since, code, n
FROM stuck ORDER BY since, id LIMIT ?`

const stuckCountSQL = stuckSQL + `
SELECT count(*) FROM stuck`

// StuckAggregates implements ports.OutboxOperatorStore.
func (s *Store) StuckAggregates(ctx context.Context, now time.Time, limit int) ([]ports.StuckAggregate, error) {
	if limit < 1 || limit > maxListLimit {
		return nil, fmt.Errorf("list stuck aggregates: limit %d outside 1..%d", limit, maxListLimit)
	}
	rows, err := s.db.QueryContext(ctx, stuckListSQL, now.Add(-ports.StuckUnconsumedAfter), limit)
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
