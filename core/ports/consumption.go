package ports

import (
	"context"
	"time"

	"github.com/july/template/core/outbox"
)

// Consumption is the evidence that a consumer ran an event to success.
type Consumption struct {
	EventID  string
	Consumer string // who consumed it, e.g. the event type's consumer name
	At       time.Time
	// Ordered is the envelope's: the record lets the next event of the
	// aggregate go, so the store wakes the relays once it is written.
	Ordered bool
}

// ConsumptionRecorder stores consumption evidence. The worker records every
// task its consumer finished before the queue is told (so a task the queue
// no longer holds was either consumed, with evidence, or lost).
type ConsumptionRecorder interface {
	// RecordConsumed stores cs in one atomic write; a record that exists
	// (same event and consumer) is kept as it is.
	RecordConsumed(ctx context.Context, cs []Consumption) error
}

// OutboxConsumptionReader finds delivered events whose consumption is not
// recorded, for the reconciler that republishes what the queue lost.
type OutboxConsumptionReader interface {
	// DeliveredUnconsumed returns up to limit (1..1000) Delivered events
	// with (delivered_at, id) after `after` and delivered_at at or before
	// until that have no consumption record and no open consumer failure,
	// ordered by (delivered_at, id); fewer than limit means none is left.
	DeliveredUnconsumed(ctx context.Context, after DeliveredCursor, until time.Time, limit int) ([]outbox.Event, error)

	// Unconsumed returns those of eventIDs (at most 1000) that are still
	// Delivered with no consumption record and no open consumer failure,
	// as full events.
	Unconsumed(ctx context.Context, eventIDs []string) ([]outbox.Event, error)

	// ReplayedUnconsumed returns up to limit (1..1000) events, lowest id
	// first, whose consumer failure was resolved by a replay at or after
	// since and that are still Delivered with no consumption record and no
	// open consumer failure: a consumer replay publishes an old event
	// again, behind any delivered_at cursor.
	ReplayedUnconsumed(ctx context.Context, since time.Time, limit int) ([]outbox.Event, error)
}

// QueueState is where the task queue holds an event's task.
type QueueState string

// Queue states. QueueMissing means the queue holds the task in no state:
// it was consumed (and not retained) or lost.
const (
	QueueMissing   QueueState = ""
	QueuePending   QueueState = "pending"
	QueueActive    QueueState = "active"
	QueueScheduled QueueState = "scheduled"
	QueueRetry     QueueState = "retry"
	QueueArchived  QueueState = "archived"
	QueueCompleted QueueState = "completed"
	QueueAggregate QueueState = "aggregating"
)

// QueueInventory tells what the task queue holds.
type QueueInventory interface {
	// TaskStates returns the state of the task of each event id, in order.
	// When the queue cannot be reached it returns promptly an error wrapping
	// ErrUnavailable.
	TaskStates(ctx context.Context, eventIDs []string) ([]QueueState, error)
}

// LossSignal is a sign that the queue may have forgotten acknowledged
// tasks: its server restarted or changed, a failover promoted a replica, a
// canary key vanished (a flush or a restart without persistence), or keys
// were evicted.
type LossSignal struct {
	Kind   string // restart, failover, canary_missing, eviction, master_switch
	Detail string // safe text for the log (no addresses with credentials)
}

// DBPosition is where a database's history stands: which cluster, which
// timeline (a restore or a promotion starts a new one) and how far its
// write-ahead log has gone.
type DBPosition struct {
	System   string // the cluster's system identifier
	Timeline uint32
	LSN      uint64
}

// After reports whether p is prev's history carried on: same cluster and
// timeline, and not behind it. It is false after a restore (a new
// timeline, another cluster, or the log set back), and after a promotion.
func (p DBPosition) After(prev DBPosition) bool {
	return p.System == prev.System && p.Timeline == prev.Timeline && p.LSN >= prev.LSN
}

// DBHistory reads where the outbox's database stands.
type DBHistory interface {
	Position(ctx context.Context) (DBPosition, error)
}

// QueueHistory is what the task queue remembers of the database: the
// position it last saw, and a way to forget what it holds for a history
// the database no longer has.
type QueueHistory interface {
	// SeenPosition returns the position last recorded; false when none is
	// (a new queue, or a queue that lost its data).
	SeenPosition(ctx context.Context) (DBPosition, bool, error)
	RecordPosition(ctx context.Context, p DBPosition) error
	// Forget deletes every task the queue holds but the running ones, and
	// returns how many.
	Forget(ctx context.Context) (int, error)
}
