package ports

import (
	"context"
	"time"

	"github.com/july/template/core/tasks"
)

// TaskStore keeps the five-state contract columns of ONE business task
// table (there is no universal task table: each business owns its table and
// embeds the columns). Adapters apply the core/tasks rules; every write is
// one atomic conditional change on the task's status, lease owner and
// fencing token, so implementations are safe for concurrent use by any
// number of workers and API replicas. When the database cannot be reached
// every method returns promptly an error wrapping ErrUnavailable and changes
// nothing.
//
// Error precedence for the lease-holder methods (Renew, SetTotal,
// RecordProgress, Complete, Fail), checked against the task as it is now:
//  1. an error wrapping ErrNotFound when no task has the id;
//  2. an error wrapping tasks.ErrTerminal when the task is Completed, Failed
//     or Cancelled (a duplicate handler must ack and stop);
//  3. an error wrapping lease.ErrLost when owner/token do not hold a live
//     lease: taken over, recovered to Pending, or expired at now (an expired
//     lease also matches lease.ErrExpired);
//  4. the rule's own error (*tasks.CountsError, *tasks.SummaryError,
//     lease.ErrInvalid).
//
// A failed call changes nothing. Times are the caller's now; a lease is live
// while now is strictly before its expiry.
type TaskStore interface {
	// Create stores a Pending task with total items, zero counts, no lease
	// (token 0) and UpdatedAt now. It returns an error wrapping ErrConflict
	// when the id exists, leaving that task unchanged, and one wrapping
	// tasks.ErrInvalidTask for an empty id or a negative total.
	Create(ctx context.Context, id string, total int64, now time.Time) (tasks.Task, error)

	// Get returns the task, or an error wrapping ErrNotFound.
	Get(ctx context.Context, id string) (tasks.Task, error)

	// Claim leases the task to owner until now+leaseFor with the next fencing
	// token (the previous token + 1) and returns it. A Pending task moves to
	// Processing and gets StartedAt now (kept if it was already set); a
	// Processing task whose lease expired at or before now is taken over,
	// keeping its counts and StartedAt. It returns an error wrapping
	// lease.ErrHeld while another live lease exists (also the caller's own:
	// use Renew), a *tasks.TransitionError wrapping tasks.ErrTerminal for a
	// finished task, lease.ErrInvalid for an empty owner or a leaseFor
	// outside (0, lease.MaxTTL], and ErrNotFound. Of concurrent claims on one
	// claimable task exactly one succeeds.
	Claim(ctx context.Context, id, owner string, leaseFor time.Duration, now time.Time) (tasks.Task, error)

	// Renew extends the live lease of owner/token to now+leaseFor, keeping
	// the token. Errors follow the precedence above.
	Renew(ctx context.Context, id, owner string, token int64, leaseFor time.Duration, now time.Time) error

	// RecordProgress adds success and failed decided items for the holder of
	// owner/token and returns the task. Negative increments and any result
	// where success+failed would exceed total are refused with a
	// *tasks.CountsError. Errors follow the precedence above.
	RecordProgress(ctx context.Context, id, owner string, token int64, success, failed int64, now time.Time) (tasks.Task, error)

	// SetTotal records the number of items for the holder of owner/token,
	// for work whose size is known only once it started (a parsed file).
	// It succeeds while no item is decided; the same total again is a
	// no-op, so a resumed worker may repeat it. A different total after an
	// item was decided, or a negative one, is a *tasks.CountsError. Errors
	// follow the precedence above.
	SetTotal(ctx context.Context, id, owner string, token int64, total int64, now time.Time) (tasks.Task, error)

	// Complete finishes the task as Completed with FinishedAt now and the
	// lease released, for the holder of owner/token. Every item must be
	// decided (success+failed == total), else a *tasks.CountsError; failed >
	// 0 is partial success and failed == total (every item failed) is still
	// Completed. Errors follow the precedence above.
	Complete(ctx context.Context, id, owner string, token int64, now time.Time) (tasks.Task, error)

	// Fail finishes the task as Failed (it could not reach its business end
	// as a whole) with summary as its error summary, FinishedAt now, counts
	// as recorded and the lease released. An invalid summary is refused with
	// a *tasks.SummaryError. Errors follow the precedence above.
	Fail(ctx context.Context, id, owner string, token int64, summary tasks.Summary, now time.Time) (tasks.Task, error)

	// Cancel finishes a Pending or Processing task as Cancelled with the
	// tasks.CodeCancelled summary, FinishedAt now and any lease released, so
	// the worker's next write fails with tasks.ErrTerminal. cancellable is
	// the business's answer to "may this task be cancelled now"; when false
	// it returns an error wrapping tasks.ErrNotCancellable and the task
	// keeps its real status. A finished task yields a *tasks.TransitionError
	// wrapping tasks.ErrTerminal; an unknown id ErrNotFound.
	Cancel(ctx context.Context, id string, now time.Time, cancellable bool) (tasks.Task, error)

	// RecoverExpired moves up to limit Processing tasks whose lease expired
	// at or before now back to Pending with the lease released, keeping
	// counts, StartedAt and the fencing token (the next claim gets token+1),
	// and UpdatedAt now. It returns the ids it moved, longest expired first
	// (empty when none expired), so the caller can deliver them again: a
	// crashed worker's queue message may be gone. Concurrent calls never
	// return the same task twice; limit must be at least 1.
	RecoverExpired(ctx context.Context, now time.Time, limit int) ([]string, error)
}

// TaskTable registers one business task table with the relay's
// task-recovery sweep (core/sweep.TaskRecovery): the sweep returns tasks
// whose lease expired (a crashed worker) to Pending and has each delivered
// again, because the crashed worker's queue message may be gone.
// pgtasks.NewTaskTable builds one.
type TaskTable struct {
	// Name labels the table in logs and metrics (e.g. "devices.assignment");
	// unique among the registered tables, at most 64 bytes.
	Name string
	// Store is the table's TaskStore.
	Store TaskStore
	// Recover moves up to limit Processing tasks whose lease expired at or
	// before now back to Pending (TaskStore.RecoverExpired) and requests
	// each one's delivery to a worker, e.g. by appending the domain's "task
	// requested" outbox event, in one transaction, and returns their ids.
	// A failed call changes nothing: a delivery is never owed only in a
	// process's memory, so a relay that restarts after a failure finds the
	// tasks expired again. A duplicate delivery must be harmless (the
	// worker's claim and lease make it so).
	Recover func(ctx context.Context, now time.Time, limit int) ([]string, error)
}
