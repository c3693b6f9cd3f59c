package relay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// MaxReplayIDs bounds the events of one replay.
const MaxReplayIDs = 500

// StuckAfter is how overdue a Pending row must be before an operator may
// replay it as stuck.
const StuckAfter = 10 * time.Minute

// OperatorStore is what Operator needs from the outbox store.
type OperatorStore interface {
	ports.OutboxOperatorStore
	ports.ConsumerFailureStore
	ports.OutboxConsumptionReader
}

// Operator runs the operator commands on the outbox. Every change commits
// with its audit record or not at all; events are never deleted and a
// delivered event is never changed.
type Operator struct {
	store OperatorStore
	tasks ports.RetainedTasks
	pub   ports.Publisher
	clock ports.Clock
}

// NewOperator returns an Operator. tasks and pub may be nil when the queue
// is not reachable from here: events whose consumer failed can then not be
// replayed (Replay says so), while failed and stuck events still can.
func NewOperator(store OperatorStore, tasks ports.RetainedTasks, pub ports.Publisher, clock ports.Clock) (*Operator, error) {
	if store == nil || clock == nil {
		return nil, errors.New("relay: NewOperator needs an outbox store and a clock")
	}
	return &Operator{store: store, tasks: tasks, pub: pub, clock: clock}, nil
}

// ReplayCommand asks for events to be delivered again.
type ReplayCommand struct {
	EventIDs []string
	Operator string // who; required
	Reason   string // why; required
	Origin   string // where the command ran, "user@host"; audited beside Operator
	BatchID  string // default: replay-<UTC time>-<suffix>
	// NewSuffixFunc returns the default batch id's suffix (a short random id).
	NewSuffixFunc func() string
}

// ReplayOutcome is what Replay did.
type ReplayOutcome struct {
	BatchID string
	// Replayed are the failed or stuck events now Pending again (the relay
	// delivers them) and the delivered events whose consumer failed, now
	// enqueued again.
	Replayed []string
	// Skipped maps an event id to why it was not replayed.
	Skipped      map[string]string
	TasksDeleted int
	// TasksKept is true when no queue was configured, so events whose
	// consumer failed were not replayed (see NewOperator).
	TasksKept bool
}

// Replay delivers the chosen events again, keeping their event_id:
//
//   - a failed or stuck event (outbox.CanReplay) becomes Pending again, in
//     one transaction with its audit record; the relay delivers it;
//   - a delivered event with an open consumer failure is replayed through
//     the queue, never by changing the delivered row: first the replay is
//     recorded (the failures are stamped with the batch, with the audit
//     record, and committed), then, outside any transaction, its retained
//     task is deleted and its envelope enqueued again, then the failure is
//     resolved. A queue error leaves the failure open (reported in
//     Skipped), so a rerun finishes it; a crash after enqueueing at worst
//     runs the consumer twice, which consumers tolerate.
func (o *Operator) Replay(ctx context.Context, cmd ReplayCommand) (ReplayOutcome, error) {
	if len(cmd.EventIDs) == 0 {
		return ReplayOutcome{}, &outbox.ValidationError{Field: "event_id", Reason: "give at least one event id"}
	}
	now := o.clock.Now()
	out := ReplayOutcome{BatchID: cmd.BatchID, Skipped: map[string]string{}, TasksKept: o.tasks == nil || o.pub == nil}
	if out.BatchID == "" {
		suffix := "batch"
		if cmd.NewSuffixFunc != nil {
			suffix = cmd.NewSuffixFunc()
		}
		out.BatchID = "replay-" + now.UTC().Format("20060102T150405Z") + "-" + suffix
	}
	req := outbox.ReplayRequest{Operator: cmd.Operator, Reason: cmd.Reason, BatchID: out.BatchID}
	if err := req.Validate(); err != nil {
		return ReplayOutcome{}, fmt.Errorf("replay outbox events: %w", err)
	}
	if len(cmd.EventIDs) > MaxReplayIDs {
		return ReplayOutcome{}, &outbox.ValidationError{Field: "event_id", Reason: fmt.Sprintf("give at most %d event ids per replay", MaxReplayIDs)}
	}
	if err := o.failUnconsumedBlockers(ctx, cmd.EventIDs, now); err != nil {
		return ReplayOutcome{}, fmt.Errorf("replay outbox events: %w", err)
	}
	failures, err := o.store.OpenConsumerFailures(ctx, ports.ConsumerFailureFilter{EventIDs: cmd.EventIDs, Limit: MaxReplayIDs})
	if err != nil {
		return ReplayOutcome{}, fmt.Errorf("replay outbox events: read consumer failures: %w", err)
	}
	consumer := map[string]bool{}
	for _, f := range failures {
		consumer[f.EventID] = true
	}
	var relayIDs, consumerIDs []string
	for _, id := range cmd.EventIDs {
		if consumer[id] {
			consumerIDs = append(consumerIDs, id)
		} else {
			relayIDs = append(relayIDs, id)
		}
	}
	audit := ports.AuditRecord{
		Action: "outbox.replay", Actor: cmd.Operator, ResourceType: "outbox_batch", ResourceID: out.BatchID,
		Outcome: ports.AuditAccepted, Reason: cmd.Reason, Origin: cmd.Origin, At: now,
	}
	if len(relayIDs) > 0 {
		res, err := o.store.Replay(ctx, ports.ReplayParams{EventIDs: relayIDs, Now: now, StuckAfter: StuckAfter, Request: req, Audit: audit})
		if err != nil {
			return ReplayOutcome{}, fmt.Errorf("replay outbox events: %w", err)
		}
		out.Replayed = append(out.Replayed, res.Replayed...)
		for id, why := range res.Skipped {
			out.Skipped[id] = why
		}
	}
	if len(consumerIDs) == 0 {
		return out, nil
	}
	if out.TasksKept {
		for _, id := range consumerIDs {
			out.Skipped[id] = "its consumer failed: replaying it needs the queue (set REDIS_URL)"
		}
		return out, nil
	}
	audit.Action = "outbox.replay_consumer"
	stamped, err := o.store.RequestConsumerReplay(ctx, ports.ConsumerReplayParams{EventIDs: consumerIDs, BatchID: out.BatchID, Now: now, Audit: audit})
	if err != nil {
		return out, fmt.Errorf("replay outbox events: record the consumer replay: %w", err)
	}
	var resolved []string
	for _, id := range stamped {
		n, err := o.requeue(ctx, id)
		out.TasksDeleted += n
		if err != nil {
			out.Skipped[id] = "its consumer failed; enqueueing it again failed (the failure stays open, rerun the replay): " + err.Error()
			continue
		}
		resolved = append(resolved, id)
	}
	if len(resolved) > 0 {
		if _, err := o.store.ResolveConsumerFailures(ctx, out.BatchID, resolved, o.clock.Now()); err != nil {
			return out, fmt.Errorf("replay outbox events: %d events were enqueued again but their failures stay open (a rerun enqueues them once more): %w", len(resolved), err)
		}
	}
	out.Replayed = append(out.Replayed, resolved...)
	return out, nil
}

// failUnconsumedBlockers records a consumer failure (CodeNeverConsumed)
// for each of ids that blocks its ordered aggregate delivered and never
// recorded as consumed, with no failure open (its task lost after a
// replay, or a consumer that does not record): the replay then takes the
// consumer path for it (its retained task deleted, enqueued again, the
// reconciler watching it), where the relay's replay would refuse a
// delivered event. It reads ids themselves (at most MaxReplayIDs), not a
// listing of stuck aggregates, which is bounded and would miss some.
func (o *Operator) failUnconsumedBlockers(ctx context.Context, ids []string, now time.Time) error {
	evs, err := o.store.Unconsumed(ctx, ids)
	if err != nil {
		return fmt.Errorf("read which events are delivered and unconsumed: %w", err)
	}
	for _, ev := range evs {
		if !ev.Ordered || ev.DeliveredAt == nil || now.Sub(*ev.DeliveredAt) < ports.StuckUnconsumedAfter {
			continue // not blocking, or not for long enough to be stuck
		}
		if _, err := o.store.MarkConsumerFailed(ctx, ports.ConsumerFailure{EventID: ev.EventID, Code: CodeNeverConsumed,
			Message: "delivered and never recorded as consumed; replayed by an operator", At: now}); err != nil {
			return fmt.Errorf("record the unconsumed blocker %s: %w", ev.EventID, err)
		}
	}
	return nil
}

// requeue deletes the retained task of a delivered event and enqueues its
// envelope again.
func (o *Operator) requeue(ctx context.Context, eventID string) (int, error) {
	ev, err := o.store.Get(ctx, eventID)
	if err != nil {
		return 0, fmt.Errorf("read event: %w", err)
	}
	n, err := o.tasks.Delete(ctx, []string{eventID})
	if err != nil {
		return n, fmt.Errorf("delete the retained task (if it is active, retry when its consumer finishes): %w", err)
	}
	if errs := o.pub.Publish(ctx, []outbox.Envelope{ev.Envelope()}); errs[0] != nil {
		return n, fmt.Errorf("enqueue: %w", errs[0])
	}
	return n, nil
}

// ReleaseCommand asks for the leases of a dead holder to be released.
type ReleaseCommand struct {
	Owner    string // lease owner; "" for every owner
	Operator string // who; required
	Reason   string // why; required
	Origin   string // where the command ran, "user@host"; audited beside Operator
}

// ReleaseLeases returns every Delivering row held by cmd.Owner to Pending
// at once, live leases included: for an operator who knows the holder is
// dead. It returns the released event ids.
func (o *Operator) ReleaseLeases(ctx context.Context, cmd ReleaseCommand) ([]string, error) {
	owner, operator, reason := cmd.Owner, cmd.Operator, cmd.Reason
	if strings.TrimSpace(operator) == "" || strings.TrimSpace(reason) == "" {
		return nil, &outbox.ValidationError{Field: "operator", Reason: "operator and reason are required; they are written to the audit trail"}
	}
	for _, f := range [...][2]string{{"operator", operator}, {"reason", reason}} {
		if err := outbox.CheckAuditText(f[0], f[1]); err != nil {
			return nil, fmt.Errorf("release outbox leases: %w", err)
		}
	}
	resID := owner
	if resID == "" {
		resID = "*"
	}
	now := o.clock.Now()
	ids, err := o.store.ReleaseLeases(ctx, ports.ReleaseParams{Owner: owner, Now: now, Audit: ports.AuditRecord{
		Action: "outbox.release_leases", Actor: operator, ResourceType: "outbox_lease_owner", ResourceID: resID,
		Outcome: ports.AuditAccepted, Reason: reason, Origin: cmd.Origin, At: now,
	}})
	if err != nil {
		return nil, fmt.Errorf("release outbox leases: %w", err)
	}
	return ids, nil
}
