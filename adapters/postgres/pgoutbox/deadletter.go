package pgoutbox

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// consumerFailedSQL is outbox.ConsumerFailed as one conditional UPDATE: the
// status = 3 condition is the rule's precondition, so a second mark, a
// replayed row or a row the relay has not marked delivered yet is left
// alone. delivered_at stays as history.
const consumerFailedSQL = `UPDATE tb_outbox_event
SET status = 4, last_error_code = ?, last_error_message = ?, updated_at = ?
WHERE event_id = ?::uuid AND status = 3`

// MarkConsumerFailed implements ports.ConsumerFailureStore: the Delivered
// row of f.EventID becomes Failed with f's code (ConsumerFailedCode unless a
// valid UPPER_SNAKE_CASE code) and message (made safe and cut to the
// column). delivered_at stays as history.
func (s *Store) MarkConsumerFailed(ctx context.Context, f ports.ConsumerFailure) (bool, error) {
	eventID, now := f.EventID, f.At
	if _, err := uuid.Parse(eventID); err != nil {
		return false, nil // no row can have this id
	}
	// Run the core rule on the precondition the WHERE clause enforces, so
	// the stored code and message are exactly what the rule decides.
	ev, err := outbox.ConsumerFailed(outbox.Event{EventID: eventID, Status: outbox.Delivered}, f.Code, f.Message, now)
	if err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, consumerFailedSQL, ev.LastErrorCode, ev.LastErrorMessage, now, eventID)
	if err != nil {
		return false, fmt.Errorf("mark outbox event %s failed in its consumer: %w", eventID, pgerr.Translate(err))
	}
	n, err := pgerr.Affected(res)
	return n > 0, err
}
