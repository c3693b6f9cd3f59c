package ports

import (
	"context"
	"time"

	"github.com/july/template/core/outbox"
)

// OutboxWriter appends events. Business code does not use it: it calls the
// adapter's transaction-bound function (pgoutbox.Append with its own
// bun.Tx) so the event commits with the business fact. OutboxWriter exists
// for tools and tests that have no business transaction.
type OutboxWriter interface {
	// Append stores events as Pending in one atomic write, assigning ID (and
	// CreatedAt/UpdatedAt from the events). It returns an error wrapping
	// ErrConflict, and stores none of them, when an event_id already exists.
	// IDs follow the order of events, and the ordered events of one
	// aggregate from concurrent callers take IDs in commit order.
	Append(ctx context.Context, events ...outbox.Event) error
}

// LeaseRef names one leased row: its id and the fencing token of the claim.
type LeaseRef struct {
	ID    int64
	Token int64
}

// ClaimParams are the arguments to OutboxRelayStore.Claim.
type ClaimParams struct {
	Owner    string        // lease owner, e.g. "relay-7f3a/loop-0"
	Limit    int           // at most this many rows, >= 1
	LeaseFor time.Duration // lease length, (0, lease.MaxTTL]
	Now      time.Time
}

// FailItem is one failed delivery: the row, its claim token and the
// decision from outbox.Policy.OnFailure.
type FailItem struct {
	Ref      LeaseRef
	Decision outbox.FailureDecision
}

// OutboxRelayStore is what the relay needs to move committed events out.
// Implementations must be safe for concurrent use by several relay
// processes: two callers never hold the same row at once.
type OutboxRelayStore interface {
	// Claim leases up to p.Limit due rows to p.Owner until p.Now+p.LeaseFor:
	// Pending rows whose next_attempt_at <= p.Now, oldest due first. Each
	// claim increments the row's fencing token and moves it to Delivering.
	// Rows leased to anyone else, including an expired lease (recovery
	// handles those), are skipped. It returns an empty slice, not an error,
	// when nothing is due. Rows inserted by uncommitted transactions are
	// never returned. An ordered row (outbox.Event.Ordered) is due only
	// when the previous ordered row of its aggregate (by ID) is gone or
	// Delivered with a consumption record (ConsumptionRecorder).
	Claim(ctx context.Context, p ClaimParams) ([]outbox.Event, error)

	// Complete marks the referenced rows Delivered, in one atomic write, for
	// those still leased to owner with the same token and an unexpired lease
	// at now. It returns the ids that were not completed because the lease
	// was lost; they are left untouched. A delivered row never changes again.
	Complete(ctx context.Context, owner string, now time.Time, refs []LeaseRef) (lost []int64, err error)

	// Fail records failed attempts: each row still held by owner/token at now
	// takes item.Decision (back to Pending with next_attempt_at, retry_count,
	// last error; or Failed for good). Lost rows are returned, untouched.
	Fail(ctx context.Context, owner string, now time.Time, items []FailItem) (lost []int64, err error)

	// Renew extends the held, unexpired leases to now+leaseFor, keeping the
	// tokens. It returns the ids whose lease was lost.
	Renew(ctx context.Context, owner string, now time.Time, leaseFor time.Duration, refs []LeaseRef) (lost []int64, err error)

	// Release hands held rows back as Pending, due at now, without counting
	// an attempt (graceful shutdown). It returns the ids whose lease was lost.
	Release(ctx context.Context, owner string, now time.Time, refs []LeaseRef) (lost []int64, err error)

	// RecoverExpired takes back up to p.Limit Delivering rows whose lease
	// expired at or before p.Now, longest expired first. The holder stopped
	// before finishing (perhaps killed by this very event), so the lost lease
	// counts as a failed attempt. Each row takes outbox.Recover's outcome
	// under p.Policy, with its own random number in [0, 1) for the jitter:
	// retry_count+1 and last error outbox.CodeLeaseExpired, then Pending due
	// after the policy's backoff, or Failed when that was its last attempt.
	// event_id, payload, ids and the fencing token are kept and the lease is
	// freed. It reports how many rows went back to Pending and which failed.
	RecoverExpired(ctx context.Context, p RecoverParams) (RecoverResult, error)

	// ParkBlocked moves up to limit due Pending ordered rows of stuck
	// aggregates (as StuckAggregates finds them at now, with
	// ParkUnconsumedAfter in place of StuckUnconsumedAfter) to
	// next_attempt_at = until, oldest due first, and returns how many:
	// the claim then stops reading past them on every call. Rows behind a
	// head that is merely in flight stay due. Recording the
	// consumption of an ordered event (ConsumptionRecorder with Ordered
	// set) makes the next ordered row of its aggregate due again at once
	// (next_attempt_at back to its due time); a row whose record came
	// another way is due again at until. Rows behind a delayed row (the
	// first Pending ordered row of the aggregate whose not_before is after
	// now) take its not_before, and next_attempt_at no earlier: they are
	// due when it is, and counted as scheduled. Both kinds share limit.
	ParkBlocked(ctx context.Context, now, until time.Time, limit int) (int, error)
}

// RecoverParams are the arguments to OutboxRelayStore.RecoverExpired.
type RecoverParams struct {
	Now   time.Time
	Limit int // at most this many rows, >= 1
	// Policy is the relay's attempt budget (MaxAttempts, zero meaning
	// outbox.DefaultMaxAttempts) and backoff, the same as for a failed
	// publish.
	Policy outbox.Policy
}

// RecoverResult is what one RecoverExpired call did.
type RecoverResult struct {
	// Requeued counts the rows returned to Pending for another attempt.
	Requeued int
	// Failed names the rows whose expired lease was their last attempt:
	// they are now Failed with outbox.CodeLeaseExpired, and an alert is due.
	Failed []RecoveredFailure
}

// Recovered is how many expired leases the call took back in all.
func (r RecoverResult) Recovered() int { return r.Requeued + len(r.Failed) }

// RecoveredFailure identifies an event that RecoverExpired failed for good,
// without its payload.
type RecoveredFailure struct {
	ID         int64
	EventID    string
	EventType  string
	RetryCount int // attempts made, the lost one included
}

// OutboxOperatorStore serves operators and monitoring. It never deletes
// an undelivered event and never changes a delivered event's content.
type OutboxOperatorStore interface {
	// Get returns the event with eventID or ErrNotFound.
	Get(ctx context.Context, eventID string) (outbox.Event, error)

	// List returns events matching f, newest first, at most f.Limit.
	List(ctx context.Context, f OutboxFilter) ([]outbox.Event, error)

	// Replay makes the chosen events Pending again under p.Request (operator,
	// reason, batch id recorded on the rows), keeping their event_id and
	// payload. Only events that outbox.CanReplay accepts at p.Now change;
	// the others are reported in Skipped with the reason. The change and
	// p.Audit commit together or not at all.
	Replay(ctx context.Context, p ReplayParams) (ReplayResult, error)

	// ReleaseLeases returns Delivering rows held by p.Owner (all owners when
	// empty) to Pending at p.Now, even if their lease is live. For an
	// operator who knows the holder is dead. It returns the event ids that
	// changed; p.Audit, when set, commits with them or not at all.
	ReleaseLeases(ctx context.Context, p ReleaseParams) ([]string, error)

	// Stats summarises the backlog at now for monitoring.
	Stats(ctx context.Context, now time.Time) (OutboxStats, error)

	// StuckAggregates returns up to limit (1..500) aggregates whose ordered
	// events (outbox.NewParams.Ordered) wait at now behind one that needs
	// an operator, longest stuck first: the previous ordered event of the
	// first waiting one is Failed, or Delivered without a consumption
	// record and with an open consumer failure or delivered more than
	// StuckUnconsumedAfter ago. A replay of the blocker unblocks its
	// aggregate once a consumer ran it.
	StuckAggregates(ctx context.Context, now time.Time, limit int) ([]StuckAggregate, error)

	// PurgeDelivered deletes up to limit Delivered rows delivered before
	// cutoff (the retention job) and returns how many. Pending, Delivering
	// and Failed rows, Delivered rows with an open consumer failure, and
	// Delivered rows without a consumption record (ConsumptionRecorder) are
	// never deleted: retention follows consumption. The consumption records
	// of the deleted rows go with them.
	PurgeDelivered(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// OutboxStore is the whole outbox port. Adapters implement it and the
// contract suite tests it; core code depends on the narrow views.
//
// When the database cannot be reached every method returns promptly an
// error wrapping ErrUnavailable and changes nothing.
type OutboxStore interface {
	OutboxWriter
	OutboxRelayStore
	OutboxOperatorStore
	ConsumerFailureStore
	ConsumptionRecorder
	OutboxConsumptionReader
}

// OutboxFilter selects events for OutboxOperatorStore.List. Zero fields
// match everything.
type OutboxFilter struct {
	Status        outbox.Status
	EventType     string
	CorrelationID string
	AggregateType string
	AggregateID   string
	Limit         int // default 50, max 500
}

// ReplayParams are the arguments to OutboxOperatorStore.Replay.
type ReplayParams struct {
	EventIDs   []string
	Request    outbox.ReplayRequest
	Now        time.Time
	StuckAfter time.Duration // a Pending row overdue this long counts as stuck
	// Audit, when its Action is set, is written in the same transaction,
	// with After set to the replayed ids (comma separated). An
	// AuditAccepted record is written as AuditNoop when no event changed.
	Audit AuditRecord
}

// ReleaseParams are the arguments to OutboxOperatorStore.ReleaseLeases.
type ReleaseParams struct {
	Owner string // "" releases every owner's leases
	Now   time.Time
	// Audit, when its Action is set, is written in the same transaction,
	// with After set to the released event ids (comma separated). An
	// AuditAccepted record is written as AuditNoop when no lease was released.
	Audit AuditRecord
}

// ReplayResult reports what Replay did.
type ReplayResult struct {
	Replayed []string          // event ids now Pending again
	Skipped  map[string]string // event id -> why it was not replayed
}

// Why an ordered event holds its aggregate (StuckAggregate.Reason).
const (
	// StuckFailed: the relay gave up on the event (status Failed);
	// `relay outbox replay` publishes it again.
	StuckFailed = "failed"
	// StuckConsumerFailed: delivered, but its consumer failed for good;
	// replay the consumer failure.
	StuckConsumerFailed = "consumer_failed"
	// StuckUnconsumed: delivered StuckUnconsumedAfter ago and no consumer
	// recorded it (a consumer without consumption evidence, or a task the
	// queue lost that the reconciler has not republished yet).
	StuckUnconsumed = "unconsumed"
)

// StuckUnconsumedAfter is how long a delivered ordered event may go
// without a consumption record before its aggregate counts as stuck: well
// past a consumer's retries and the reconciler's republish of a lost task.
const StuckUnconsumedAfter = 5 * time.Minute

// ParkUnconsumedAfter is how long a delivered ordered event may go without
// a consumption record before the events behind it are parked
// (OutboxRelayStore.ParkBlocked): past a quick consumer, so the events
// of a chain in flight are not parked under it.
const ParkUnconsumedAfter = 10 * time.Second

// StuckAggregate is an aggregate whose ordered events wait behind Blocker.
type StuckAggregate struct {
	AggregateType, AggregateID string
	// Blocker is the event holding the aggregate: its EventID, EventType
	// and Status, with LastErrorCode set to the relay's or the consumer's
	// error code.
	Blocker outbox.Event
	Reason  string    // StuckFailed, StuckConsumerFailed or StuckUnconsumed
	Since   time.Time // when the blocker failed (or, unconsumed, was delivered)
	Waiting int64     // Pending ordered events of the aggregate behind it
}

// OutboxStats is a backlog snapshot. It counts only live and failed rows:
// delivered rows are not counted because the table may hold millions of them
// (delivery throughput comes from the relay's outbox_delivered_total counter),
// so Stats stays cheap on the partial indexes however large the table grows.
type OutboxStats struct {
	// Pending counts Pending rows that are due or backing off; Scheduled
	// the delayed ones whose not_before is still ahead (outbox.Event.DueAt
	// in the future), counted nowhere else: they are not late.
	Pending       int64
	Scheduled     int64
	Delivering    int64
	Failed        int64
	ExpiredLeases int64 // Delivering rows whose lease ran out
	// OldestPendingAge is now minus the due time (outbox.Event.DueAt) of
	// the oldest undelivered row (Pending or Delivering, not Scheduled): how long the oldest business fact has
	// waited for the queue. It keeps rising during any outage, whatever the
	// backoff does to next_attempt_at. 0 when nothing is undelivered (or
	// the oldest row was created after now).
	OldestPendingAge time.Duration
	// OldestDueAge is how long the most overdue Pending row has been due
	// (now minus its next_attempt_at): relay lag. Rows backing off into the
	// future are not due, so it stays low during an outage. 0 when no
	// Pending row is due.
	OldestDueAge time.Duration
	// StuckAggregates counts the aggregates OutboxOperatorStore.StuckAggregates
	// lists at now.
	StuckAggregates int64
	// BacklogByType counts Pending+Delivering rows per event_type.
	BacklogByType map[string]int64
	// RetryHistogram counts undelivered rows by retry_count.
	RetryHistogram map[int]int64
}

// Publisher hands envelopes to the task queue (Asynq in production).
type Publisher interface {
	// Publish enqueues each envelope with its event_id as the queue's task
	// id. It returns one error per envelope, nil when enqueued or already
	// present under that id (a re-delivery the queue absorbed). Errors
	// classify with outbox.Classify: a payload the queue can never accept is
	// permanent, an unreachable queue transient (wrapping ErrUnavailable).
	// Envelopes of one call may be enqueued concurrently.
	Publish(ctx context.Context, envs []outbox.Envelope) []error
}
