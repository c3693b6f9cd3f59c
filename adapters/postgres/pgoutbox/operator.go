package pgoutbox

import (
	"context"
	"database/sql"
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

// maxReplayBatchIDLen is the width of replay_batch_id, narrower than
// outbox.MaxOperatorLen.
const maxReplayBatchIDLen = 64

// replaySQL applies outbox.Replay's result to the rows it accepted and
// records who replayed them, why and in which batch.
const replaySQL = `UPDATE tb_outbox_event
SET status = 1, retry_count = 0, next_attempt_at = ?, updated_at = ?,
	lease_owner = NULL, lease_expires_at = NULL,
	replay_batch_id = ?, replayed_by = ?, replay_reason = ?, replayed_at = ?
WHERE id = ANY(?::bigint[])`

const releaseLeasesSQL = `UPDATE tb_outbox_event
SET status = 1, next_attempt_at = ?, updated_at = ?, lease_owner = NULL, lease_expires_at = NULL
WHERE status = 2 AND (? = '' OR lease_owner = ?)
RETURNING event_id`

// purgeSQL bounds the batch with a materialized CTE, as recoverSQL does.
// Only consumed events go (retention follows consumption): a delivered
// event no consumer recorded may still need publishing again.
const purgeSQL = `WITH old AS MATERIALIZED (
	SELECT id, event_id FROM tb_outbox_event
	WHERE status = 3 AND delivered_at < ?
	AND EXISTS (SELECT 1 FROM tb_outbox_consumption c WHERE c.event_id = tb_outbox_event.event_id)
	AND NOT EXISTS (SELECT 1 FROM tb_outbox_consumer_failure f WHERE f.event_id = tb_outbox_event.event_id AND f.resolved_at IS NULL)
	ORDER BY delivered_at
	LIMIT ?
	FOR UPDATE SKIP LOCKED
), evidence AS (
	DELETE FROM tb_outbox_consumption c USING old WHERE c.event_id = old.event_id
)
DELETE FROM tb_outbox_event AS e USING old WHERE e.id = old.id`

// statsSQL reads the whole backlog in one pass, one row per (status,
// event_type, retry_count, scheduled); Stats folds the groups into the
// counts, the backlog by type, the retry histogram and the two ages: the
// oldest due time (GREATEST(created_at, not_before), outbox.Event.DueAt)
// among undelivered rows (how long a business fact has waited, which keeps
// rising during an outage) and the oldest next_attempt_at among due
// Pending rows (relay lag). Scheduled rows (delayed, not yet due) are only
// counted: they are not late. Delivered rows, the bulk of the table, are
// excluded, so the planner can use the partial indexes of the live
// statuses.
const statsSQL = `SELECT status, event_type, retry_count, scheduled, count(*),
	count(*) FILTER (WHERE status = 2 AND lease_expires_at <= ?),
	min(due) FILTER (WHERE status IN (1, 2)),
	min(next_attempt_at) FILTER (WHERE status = 1 AND next_attempt_at <= ?)
FROM (SELECT status, event_type, retry_count, lease_expires_at, next_attempt_at,
		GREATEST(created_at, not_before) AS due,
		status = 1 AND not_before > ? AS scheduled
	FROM tb_outbox_event WHERE status IN (1, 2, 4)) AS live
GROUP BY status, event_type, retry_count, scheduled`

// Replay makes the chosen Failed or stuck events Pending again in one
// transaction: the rows are locked, checked with outbox.Replay, and the
// accepted ones updated together with the replay record. Unknown ids and
// rows outbox.CanReplay refuses (delivered, live leases, not yet stuck)
// are listed in Skipped and not touched. An invalid request changes
// nothing and returns its *outbox.ValidationError.
func (s *Store) Replay(ctx context.Context, p ports.ReplayParams) (ports.ReplayResult, error) {
	req := p.Request
	if err := req.Validate(); err != nil {
		return ports.ReplayResult{}, fmt.Errorf("replay outbox events: %w", err)
	}
	if len(req.BatchID) > maxReplayBatchIDLen {
		return ports.ReplayResult{}, fmt.Errorf("replay outbox events: %w", &outbox.ValidationError{Field: "batch_id", Reason: fmt.Sprintf("is longer than %d bytes", maxReplayBatchIDLen)})
	}
	res := ports.ReplayResult{Skipped: map[string]string{}}
	var wanted []string // valid ids, each once, in request order
	seen := make(map[string]bool, len(p.EventIDs))
	for _, id := range p.EventIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		if _, err := uuid.Parse(id); err != nil {
			res.Skipped[id] = "not found: not a uuid"
			continue
		}
		wanted = append(wanted, id)
	}
	if len(wanted) == 0 && p.Audit.Action == "" {
		return res, nil
	}
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var rows []outboxRow
		if err := tx.NewSelect().Model(&rows).
			Where("event_id = ANY(?::uuid[])", pgdialect.Array(wanted)).
			OrderExpr("id").For("UPDATE").Scan(ctx); err != nil {
			return err
		}
		byID := make(map[string]outbox.Event, len(rows))
		for i := range rows {
			byID[rows[i].EventID] = rows[i].toEvent()
		}
		var ids []int64
		for _, id := range wanted {
			ev, ok := byID[id]
			if !ok {
				res.Skipped[id] = "not found"
				continue
			}
			if _, err := outbox.Replay(ev, req, p.Now, p.StuckAfter); err != nil {
				res.Skipped[id] = err.Error()
				continue
			}
			ids = append(ids, ev.ID)
			res.Replayed = append(res.Replayed, id)
		}
		if len(ids) > 0 {
			if _, err := tx.ExecContext(ctx, replaySQL, p.Now, p.Now, req.BatchID, req.Operator, req.Reason, p.Now, pgdialect.Array(ids)); err != nil {
				return err
			}
		}
		return s.audit(ctx, tx, p.Audit, res.Replayed)
	})
	if err != nil {
		return ports.ReplayResult{}, fmt.Errorf("replay %d outbox events: %w", len(wanted), pgerr.Translate(err))
	}
	return res, nil
}

// ReleaseLeases returns Delivering rows held by p.Owner (every owner when
// empty) to Pending due at p.Now, live leases included, keeping retry_count
// and the tokens, in one transaction with p.Audit.
func (s *Store) ReleaseLeases(ctx context.Context, p ports.ReleaseParams) ([]string, error) {
	var ids []string
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := tx.NewRaw(releaseLeasesSQL, p.Now, p.Now, p.Owner, p.Owner).Scan(ctx, &ids); err != nil {
			return err
		}
		return s.audit(ctx, tx, p.Audit, ids)
	})
	if err != nil {
		return nil, fmt.Errorf("release outbox leases of %q: %w", p.Owner, pgerr.Translate(err))
	}
	return ids, nil
}

// audit writes rec, when it is set, with After listing the changed ids;
// an accepted command that changed nothing is recorded as a no-op.
func (s *Store) audit(ctx context.Context, tx bun.Tx, rec ports.AuditRecord, ids []string) error {
	if rec.Action == "" {
		return nil
	}
	rec.After = strings.Join(ids, ",")
	if len(ids) == 0 && rec.Outcome == ports.AuditAccepted {
		rec.Outcome = ports.AuditNoop
	}
	return s.cfg.Audit.WriteAudit(ctx, tx, rec)
}

// Stats returns the backlog at now in one query (one consistent
// snapshot), and the stuck aggregates in a second. OldestPendingAge is
// the age of the oldest undelivered row by due time, OldestDueAge how
// long the most overdue Pending row has been due (each 0 when there is
// none).
func (s *Store) Stats(ctx context.Context, now time.Time) (ports.OutboxStats, error) {
	st := ports.OutboxStats{BacklogByType: map[string]int64{}, RetryHistogram: map[int]int64{}}
	rows, err := s.db.QueryContext(ctx, statsSQL, now, now, now)
	if err != nil {
		return st, fmt.Errorf("count outbox events: %w", pgerr.Translate(err))
	}
	defer rows.Close()
	var oldest, oldestDue time.Time
	earliest := func(cur *time.Time, t bun.NullTime) {
		if !t.IsZero() && (cur.IsZero() || t.Before(*cur)) {
			*cur = t.Time
		}
	}
	for rows.Next() {
		var (
			status           outbox.Status
			eventType        string
			retries          int
			scheduled        sql.NullBool
			n, expired       int64
			groupOldest, due bun.NullTime
		)
		if err := rows.Scan(&status, &eventType, &retries, &scheduled, &n, &expired, &groupOldest, &due); err != nil {
			return st, fmt.Errorf("count outbox events: %w", err)
		}
		if scheduled.Bool {
			st.Scheduled += n
			continue
		}
		switch status {
		case outbox.Pending:
			st.Pending += n
			st.BacklogByType[eventType] += n
		case outbox.Delivering:
			st.Delivering += n
			st.ExpiredLeases += expired
			st.BacklogByType[eventType] += n
		case outbox.Failed:
			st.Failed += n
		}
		st.RetryHistogram[retries] += n
		earliest(&oldest, groupOldest)
		earliest(&oldestDue, due)
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("count outbox events: %w", pgerr.Translate(err))
	}
	if !oldest.IsZero() {
		st.OldestPendingAge = max(now.Sub(oldest), 0)
	}
	if !oldestDue.IsZero() {
		st.OldestDueAge = max(now.Sub(oldestDue), 0)
	}
	if err := s.db.QueryRowContext(ctx, stuckCountSQL, now.Add(-ports.StuckUnconsumedAfter)).Scan(&st.StuckAggregates); err != nil {
		return st, fmt.Errorf("count stuck aggregates: %w", pgerr.Translate(err))
	}
	return st, nil
}

// PurgeDelivered deletes up to limit (lowered to Config.SweepLimit)
// rows delivered before cutoff, oldest first. Other statuses are never
// deleted.
func (s *Store) PurgeDelivered(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, fmt.Errorf("purge delivered outbox events: limit %d; pass 1 or more", limit)
	}
	res, err := s.db.ExecContext(ctx, purgeSQL, cutoff, min(limit, s.cfg.SweepLimit))
	if err != nil {
		return 0, fmt.Errorf("purge delivered outbox events: %w", pgerr.Translate(err))
	}
	return pgerr.Affected(res)
}
