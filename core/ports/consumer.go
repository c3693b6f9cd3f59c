package ports

import (
	"context"
	"time"

	"github.com/july/template/core/outbox"
)

// ConsumerFailure is a delivered event whose consumer gave up on it for
// good (retries exhausted, or a permanent error).
type ConsumerFailure struct {
	EventID string
	Code    string // outbox.ConsumerFailedCode unless a valid UPPER_SNAKE_CASE code
	Message string // redacted by the caller
	At      time.Time
}

// ConsumerFailureStore keeps the durable record of consumer failures, so an
// operator can find and replay them after the queue's own archive is gone.
type ConsumerFailureStore interface {
	// MarkConsumerFailed records f on its event when the event is Delivered
	// (outbox.ConsumerFailed decides the stored code and message). It
	// reports whether a row changed: false, with a nil error, when no event
	// has that id (a plain task, a purged row, not a uuid) or the event is
	// not Delivered (not yet marked by the relay, already marked, replayed).
	MarkConsumerFailed(ctx context.Context, f ConsumerFailure) (bool, error)

	// Get returns the event with eventID or ErrNotFound.
	Get(ctx context.Context, eventID string) (outbox.Event, error)
}

// RetainedTasks forgets the task queue's retained copies of events (a
// completed or archived task keeps its id for a while), so the next
// publish of the same event_id is enqueued instead of absorbed.
type RetainedTasks interface {
	// Delete deletes the task of each event id, in order. An id the queue
	// does not hold is not an error. It returns how many tasks it deleted;
	// a task whose consumer is running stops it with an error wrapping
	// ErrTaskActive (the tasks before it stay deleted). When the queue
	// cannot be reached it returns promptly an error wrapping
	// ErrUnavailable.
	Delete(ctx context.Context, eventIDs []string) (int, error)
}
