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

// StuckAfter is how overdue a Pending row must be before an operator may
// replay it as stuck.
const StuckAfter = 10 * time.Minute

// Operator runs the operator commands on the outbox. Every change commits
// with its audit record or not at all; events are never deleted and a
// delivered event is never changed.
type Operator struct {
	store ports.OutboxOperatorStore
	tasks ports.RetainedTasks
	clock ports.Clock
}

// NewOperator returns an Operator. tasks may be nil when the queue is not
// reachable from here: a replayed event whose task the queue still retains
// is then absorbed as a duplicate, and Replay says so in its result.
func NewOperator(store ports.OutboxOperatorStore, tasks ports.RetainedTasks, clock ports.Clock) (*Operator, error) {
	if store == nil || clock == nil {
		return nil, errors.New("relay: NewOperator needs an outbox store and a clock")
	}
	return &Operator{store: store, tasks: tasks, clock: clock}, nil
}

// ReplayCommand asks for events to be delivered again.
type ReplayCommand struct {
	EventIDs []string
	Operator string // who; required
	Reason   string // why; required
	BatchID  string // default: replay-<UTC time>-<suffix>
	// NewSuffixFunc returns the default batch id's suffix (a short random id).
	NewSuffixFunc func() string
}

// ReplayOutcome is what Replay did.
type ReplayOutcome struct {
	BatchID      string
	Replayed     []string
	Skipped      map[string]string
	TasksDeleted int
	// TasksKept is true when no queue was configured, so retained tasks
	// were not deleted (see NewOperator).
	TasksKept bool
}

// Replay makes failed or stuck events Pending again (outbox.CanReplay
// decides which), keeping their event_id. The queue's retained task of each
// replayed event is deleted inside the replay's transaction, while its row
// is locked and not yet Pending: deleted after commit, a relay could
// re-publish first and be absorbed by the task about to be deleted. A task
// whose consumer is still running aborts the whole replay.
func (o *Operator) Replay(ctx context.Context, cmd ReplayCommand) (ReplayOutcome, error) {
	if len(cmd.EventIDs) == 0 {
		return ReplayOutcome{}, &outbox.ValidationError{Field: "event_id", Reason: "give at least one event id"}
	}
	now := o.clock.Now()
	out := ReplayOutcome{BatchID: cmd.BatchID, TasksKept: o.tasks == nil}
	if out.BatchID == "" {
		suffix := "batch"
		if cmd.NewSuffixFunc != nil {
			suffix = cmd.NewSuffixFunc()
		}
		out.BatchID = "replay-" + now.UTC().Format("20060102T150405Z") + "-" + suffix
	}
	p := ports.ReplayParams{
		EventIDs: cmd.EventIDs, Now: now, StuckAfter: StuckAfter,
		Request: outbox.ReplayRequest{Operator: cmd.Operator, Reason: cmd.Reason, BatchID: out.BatchID},
		Audit: ports.AuditRecord{
			Action: "outbox.replay", Actor: cmd.Operator, ResourceType: "outbox_batch", ResourceID: out.BatchID,
			Outcome: "accepted", Reason: cmd.Reason, At: now,
		},
	}
	if o.tasks != nil {
		p.BeforeCommitFunc = func(ctx context.Context, ids []string) error {
			n, err := o.tasks.Delete(ctx, ids)
			out.TasksDeleted = n
			if err != nil {
				return fmt.Errorf("delete the queue's retained tasks (if one is active, retry when its consumer finishes): %w", err)
			}
			return nil
		}
	}
	res, err := o.store.Replay(ctx, p)
	if err != nil {
		return ReplayOutcome{}, fmt.Errorf("replay outbox events: %w", err)
	}
	out.Replayed, out.Skipped = res.Replayed, res.Skipped
	return out, nil
}

// ReleaseLeases returns every Delivering row held by owner ("" for every
// owner) to Pending at once, live leases included: for an operator who
// knows the holder is dead. It returns the released event ids.
func (o *Operator) ReleaseLeases(ctx context.Context, owner, operator, reason string) ([]string, error) {
	if strings.TrimSpace(operator) == "" || strings.TrimSpace(reason) == "" {
		return nil, &outbox.ValidationError{Field: "operator", Reason: "operator and reason are required; they are written to the audit trail"}
	}
	resID := owner
	if resID == "" {
		resID = "*"
	}
	now := o.clock.Now()
	ids, err := o.store.ReleaseLeases(ctx, ports.ReleaseParams{Owner: owner, Now: now, Audit: ports.AuditRecord{
		Action: "outbox.release_leases", Actor: operator, ResourceType: "outbox_lease_owner", ResourceID: resID,
		Outcome: "accepted", Reason: reason, At: now,
	}})
	if err != nil {
		return nil, fmt.Errorf("release outbox leases: %w", err)
	}
	return ids, nil
}
