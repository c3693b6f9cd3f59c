package ports

import (
	"context"
	"time"

	"github.com/july/template/core/outbox"
)

// ConsumerFailure is the report that a delivered event's consumer gave up
// on it for good (retries exhausted, or a permanent error); the store keeps
// it as an outbox.ConsumerFailureRecord.
type ConsumerFailure struct {
	EventID string
	Code    string // outbox.ConsumerFailedCode unless a valid UPPER_SNAKE_CASE code
	Message string // redacted by the caller
	At      time.Time
}

// ConsumerFailureFilter selects failures for OpenConsumerFailures.
type ConsumerFailureFilter struct {
	EventIDs []string // only these events; all when empty
	Limit    int      // default 50, max 500
}

// ConsumerReplayParams are the arguments to RequestConsumerReplay.
type ConsumerReplayParams struct {
	EventIDs []string
	BatchID  string
	Now      time.Time
	// Audit, when its Action is set, commits with the request, with After
	// set to the event ids being replayed (comma separated).
	Audit AuditRecord
}

// ConsumerFailureStore keeps the durable record of consumer failures apart
// from the events, so an operator can find and replay them after the
// queue's own archive is gone; the events stay Delivered.
//
// When the database cannot be reached every method returns promptly an
// error wrapping ErrUnavailable and changes nothing.
type ConsumerFailureStore interface {
	// MarkConsumerFailed records f as an open failure of its event, keyed by
	// the event id whatever the event's status (the relay may not have
	// marked it delivered yet, or lost its lease and put it back to pending):
	// a consumer's final failure is never lost
	// (outbox.NewConsumerFailureRecord decides the stored code and message). The event row does not change. An open failure that a
	// replay has stamped is failed again: it takes f and loses the stamp, so
	// that replay cannot resolve it. It reports whether a failure was
	// recorded: false, with a nil error, when no event has that id (a plain
	// task, a purged row, not a uuid) or it has an open, unstamped failure.
	MarkConsumerFailed(ctx context.Context, f ConsumerFailure) (bool, error)

	// Get returns the event with eventID or ErrNotFound.
	Get(ctx context.Context, eventID string) (outbox.Event, error)

	// OpenConsumerFailures returns the unresolved failures matching f,
	// oldest first.
	OpenConsumerFailures(ctx context.Context, f ConsumerFailureFilter) ([]outbox.ConsumerFailureRecord, error)

	// RequestConsumerReplay stamps the open failures of p.EventIDs with
	// p.BatchID and p.Now (they stay open until resolved) and writes
	// p.Audit, in one atomic write. It returns the event ids it stamped;
	// ids without an open failure are left out.
	RequestConsumerReplay(ctx context.Context, p ConsumerReplayParams) ([]string, error)

	// ResolveConsumerFailures closes the open failures of eventIDs that are
	// still stamped with batchID (their events were enqueued again) at now,
	// and returns how many it closed. A failure recorded again since the
	// stamp stays open.
	ResolveConsumerFailures(ctx context.Context, batchID string, eventIDs []string, now time.Time) (int, error)
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
