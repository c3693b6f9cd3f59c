package outbox

import "time"

// ConsumerFailedCode is the last_error_code ConsumerFailed records when the
// caller gives no valid code of its own.
const ConsumerFailedCode = "CONSUMER_FAILED"

// ConsumerFailed records that ev's consumer gave up on it for good (its
// queue retries ran out, or it returned a permanent error): the Delivered
// event becomes Failed, so the outbox row, not the queue's trimmed archive,
// is the durable dead-letter record an operator replays from.
//
// code must be UPPER_SNAKE_CASE of at most 64 bytes; anything else records
// ConsumerFailedCode. message goes through SafeMessage; the caller must
// redact it first. EventID, payload, ids and RetryCount are unchanged, and
// DeliveredAt is kept as history. It returns a *TransitionError when ev is
// not Delivered: a relay-side failure is Fail's, and an event already
// Failed or replayed is left alone.
//
// Delivered -> Failed is deliberately not in Transition's table: that table
// is the relay's state machine, and no relay write may take this edge.
func ConsumerFailed(ev Event, code, message string, now time.Time) (Event, error) {
	if ev.Status != Delivered {
		return ev, &TransitionError{From: ev.Status, To: Failed}
	}
	if !validCode(code) {
		code = ConsumerFailedCode
	}
	ev.Status = Failed
	ev.LastErrorCode, ev.LastErrorMessage = code, SafeMessage(message)
	ev.UpdatedAt = now
	return ev, nil
}
