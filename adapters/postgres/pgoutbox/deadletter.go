package pgoutbox

import (
	"cmp"
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

// consumerFailedSQL records an open failure of an event in any status; the
// partial unique index on open failures makes a second mark a no-op. The
// event row is not touched.
const consumerFailedSQL = `INSERT INTO tb_outbox_consumer_failure (event_id, event_type, error_code, error_message, failed_at)
SELECT e.event_id, e.event_type, ?, ?, ? FROM tb_outbox_event e WHERE e.event_id = ?::uuid
ON CONFLICT (event_id) WHERE resolved_at IS NULL DO UPDATE
SET error_code = EXCLUDED.error_code, error_message = EXCLUDED.error_message, failed_at = EXCLUDED.failed_at,
	replay_batch_id = NULL, replay_requested_at = NULL
WHERE tb_outbox_consumer_failure.replay_requested_at IS NOT NULL`

const consumerFailureColumns = `event_id, event_type, error_code, error_message, failed_at, coalesce(replay_batch_id, ''), replay_requested_at, resolved_at`

// MarkConsumerFailed implements ports.ConsumerFailureStore: an open failure
// of the event f.EventID, whatever its status, with f's code (ConsumerFailedCode unless
// a valid UPPER_SNAKE_CASE code) and message (made safe and cut to the
// column).
func (s *Store) MarkConsumerFailed(ctx context.Context, f ports.ConsumerFailure) (bool, error) {
	if _, err := uuid.Parse(f.EventID); err != nil {
		return false, nil //nolint:nilerr // no row can have this id
	}
	// Run the core rule, so the stored code and message are exactly what it
	// decides.
	rec, err := outbox.NewConsumerFailureRecord(outbox.Event{EventID: f.EventID}, f.Code, f.Message, f.At)
	if err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, consumerFailedSQL, rec.Code, rec.Message, f.At, f.EventID)
	if err != nil {
		return false, fmt.Errorf("record the consumer failure of outbox event %s: %w", f.EventID, pgerr.Translate(err))
	}
	n, err := pgerr.Affected(res)
	return n > 0, err
}

// OpenConsumerFailures implements ports.ConsumerFailureStore.
func (s *Store) OpenConsumerFailures(ctx context.Context, f ports.ConsumerFailureFilter) ([]outbox.ConsumerFailureRecord, error) {
	limit := cmp.Or(f.Limit, defaultListLimit)
	if limit < 1 || limit > maxListLimit {
		return nil, fmt.Errorf("list consumer failures: limit %d outside 1..%d", f.Limit, maxListLimit)
	}
	q := `SELECT ` + consumerFailureColumns + ` FROM tb_outbox_consumer_failure WHERE resolved_at IS NULL`
	args := []any{}
	if len(f.EventIDs) > 0 {
		ids := validIDs(f.EventIDs)
		if len(ids) == 0 {
			return nil, nil
		}
		q += ` AND event_id = ANY(?::uuid[])`
		args = append(args, pgdialect.Array(ids))
	}
	q += ` ORDER BY failed_at, id LIMIT ?`
	rows, err := s.db.QueryContext(ctx, q, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list consumer failures: %w", pgerr.Translate(err))
	}
	defer rows.Close()
	var out []outbox.ConsumerFailureRecord
	for rows.Next() {
		var c outbox.ConsumerFailureRecord
		var requested, resolved bun.NullTime
		if err := rows.Scan(&c.EventID, &c.EventType, &c.Code, &c.Message, &c.FailedAt, &c.ReplayBatchID, &requested, &resolved); err != nil {
			return nil, fmt.Errorf("list consumer failures: %w", err)
		}
		c.FailedAt = c.FailedAt.UTC()
		c.ReplayRequestedAt, c.ResolvedAt = timePtr(requested), timePtr(resolved)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list consumer failures: %w", pgerr.Translate(err))
	}
	return out, nil
}

// RequestConsumerReplay implements ports.ConsumerFailureStore.
func (s *Store) RequestConsumerReplay(ctx context.Context, p ports.ConsumerReplayParams) ([]string, error) {
	ids := validIDs(p.EventIDs)
	var stamped []string
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if len(ids) > 0 {
			if err := tx.NewRaw(`UPDATE tb_outbox_consumer_failure SET replay_batch_id = ?, replay_requested_at = ?
				WHERE resolved_at IS NULL AND event_id = ANY(?::uuid[]) RETURNING event_id`,
				p.BatchID, p.Now, pgdialect.Array(ids)).Scan(ctx, &stamped); err != nil {
				return err
			}
		}
		return s.audit(ctx, tx, p.Audit, stamped)
	})
	if err != nil {
		return nil, fmt.Errorf("record the replay of %d consumer failures: %w", len(ids), pgerr.Translate(err))
	}
	return stamped, nil
}

// ResolveConsumerFailures implements ports.ConsumerFailureStore.
func (s *Store) ResolveConsumerFailures(ctx context.Context, batchID string, eventIDs []string, now time.Time) (int, error) {
	ids := validIDs(eventIDs)
	if len(ids) == 0 {
		return 0, nil
	}
	res, err := s.db.ExecContext(ctx, `UPDATE tb_outbox_consumer_failure SET resolved_at = ? WHERE resolved_at IS NULL AND replay_batch_id = ? AND event_id = ANY(?::uuid[])`,
		now, batchID, pgdialect.Array(ids))
	if err != nil {
		return 0, fmt.Errorf("resolve %d consumer failures: %w", len(ids), pgerr.Translate(err))
	}
	return pgerr.Affected(res)
}

// validIDs keeps the ids that are uuids, lower-cased.
func validIDs(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if _, err := uuid.Parse(id); err == nil {
			out = append(out, strings.ToLower(id))
		}
	}
	return out
}

func timePtr(t bun.NullTime) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
