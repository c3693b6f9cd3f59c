package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/july/template/core/outbox"
)

// consumerFailedSQL is outbox.ConsumerFailed as one conditional UPDATE: the
// status = 3 condition is the rule's precondition, so a second mark, a
// replayed row or a row the relay has not marked delivered yet is left
// alone. delivered_at stays as history.
const consumerFailedSQL = `UPDATE tb_outbox_event
SET status = 4, last_error_code = ?, last_error_message = ?, updated_at = ?
WHERE event_id = ?::uuid AND status = 3`

// MarkConsumerFailed records that the consumer of the delivered event
// eventID gave up on it (see outbox.ConsumerFailed): the row becomes Failed
// with code (ConsumerFailedCode unless a valid UPPER_SNAKE_CASE code) and
// message (made safe and cut to the column; redact it first). It reports
// whether a row changed: false when no event has that id (a plain task's
// id, a purged row) or the event is not Delivered, e.g. already marked.
func (s *OutboxStore) MarkConsumerFailed(ctx context.Context, eventID, code, message string, now time.Time) (bool, error) {
	if _, err := uuid.Parse(eventID); err != nil {
		return false, nil // no row can have this id
	}
	// Run the core rule on the precondition the WHERE clause enforces, so
	// the stored code and message are exactly what the rule decides.
	ev, err := outbox.ConsumerFailed(outbox.Event{EventID: eventID, Status: outbox.Delivered}, code, message, now)
	if err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, consumerFailedSQL, ev.LastErrorCode, ev.LastErrorMessage, now, eventID)
	if err != nil {
		return false, fmt.Errorf("mark outbox event %s failed in its consumer: %w", eventID, translate(err))
	}
	n, err := affected(res)
	return n > 0, err
}
