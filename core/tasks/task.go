package tasks

import (
	"errors"
	"fmt"
	"time"

	"github.com/july/template/core/lease"
)

var (
	// ErrInvalidTask is returned by NewTask and Task.Validate for a task that
	// cannot exist: empty id, invalid status or broken counts.
	ErrInvalidTask = errors.New("invalid task")
	// ErrNotCancellable is returned by Cancel when the business does not
	// support cancelling this task. The task keeps its real status.
	ErrNotCancellable = errors.New("task is not cancellable")
)

// Task is the contract-relevant state of one row of a business task table.
// Its methods are pure: each returns the next state, or the unchanged task
// and an error. Persist a result with a conditional update on the status,
// lease owner and fencing token the method was called with.
//
// The lease and fencing rules of Claim, the holder's writes and
// RecoverExpired are repeated in SQL by adapters/postgres/pgtasks/store.go
// (taskClaimSQL, taskHeldWhere, taskRecoverSQL); adapters/memory runs
// these methods instead. contracttests.RunTaskStore runs against both
// stores and holds the two forms together: change both.
type Task struct {
	// ID is the task_id exposed to callers.
	ID     string
	Status Status
	Counts Counts
	// Lease is the worker claim; free unless Processing.
	Lease lease.Lease
	// Summary is the failure (or cancellation) summary; nil otherwise.
	Summary *Summary
	// StartedAt is set by the first Claim and kept across recoveries.
	StartedAt *time.Time
	// FinishedAt is set when the task reaches a terminal status.
	FinishedAt *time.Time
	UpdatedAt  time.Time
}

// NewTask returns a Pending task with total items.
func NewTask(id string, total int64, now time.Time) (Task, error) {
	t := Task{ID: id, Status: Pending, Counts: Counts{Total: total}, UpdatedAt: now}
	if err := t.Validate(); err != nil {
		return Task{}, err
	}
	return t, nil
}

// Validate checks a task read from storage: non-empty id, a valid status and
// counts that hold for that status (Success+Failed == Total when Completed).
func (t Task) Validate() error {
	switch {
	case t.ID == "":
		return fmt.Errorf("%w: task id is empty", ErrInvalidTask)
	case !t.Status.Valid():
		return fmt.Errorf("%w %q: %w: %d", ErrInvalidTask, t.ID, ErrInvalidStatus, int16(t.Status))
	}
	if err := t.Counts.Validate(t.Status == Completed); err != nil {
		return fmt.Errorf("%w %q: %w", ErrInvalidTask, t.ID, err)
	}
	return nil
}

// Claim gives the task to owner until now+ttl with a new fencing token
// (read it from the result's Lease.Token). A Pending task moves to
// Processing; a Processing task whose lease expired (at or after ExpiresAt)
// is taken over, keeping its counts. A live lease yields lease.ErrHeld and a
// terminal task a *TransitionError matching ErrTerminal.
func (t Task) Claim(owner string, now time.Time, ttl time.Duration) (Task, error) {
	if t.Status != Processing {
		if err := Transition(t.Status, Processing); err != nil {
			return t, fmt.Errorf("claim task %q: %w", t.ID, err)
		}
	}
	l, err := t.Lease.Claim(owner, now, ttl)
	if err != nil {
		return t, fmt.Errorf("claim task %q: %w", t.ID, err)
	}
	t.Status, t.Lease, t.UpdatedAt = Processing, l, now
	if t.StartedAt == nil {
		t.StartedAt = &now
	}
	return t, nil
}

// Renew extends the lease of owner/token to now+ttl.
func (t Task) Renew(owner string, token int64, now time.Time, ttl time.Duration) (Task, error) {
	if err := t.holds("renew", owner, token, now); err != nil {
		return t, err
	}
	l, err := t.Lease.Renew(owner, token, now, ttl)
	if err != nil {
		return t, fmt.Errorf("renew task %q: %w", t.ID, err)
	}
	t.Lease, t.UpdatedAt = l, now
	return t, nil
}

// RecordProgress adds success and failed decided items on behalf of the
// lease holder. It never lets Success+Failed exceed Total (*CountsError).
func (t Task) RecordProgress(owner string, token int64, success, failed int64, now time.Time) (Task, error) {
	if err := t.holds("record progress of", owner, token, now); err != nil {
		return t, err
	}
	c, err := t.Counts.Add(success, failed)
	if err != nil {
		return t, fmt.Errorf("record progress of task %q: %w", t.ID, err)
	}
	t.Counts, t.UpdatedAt = c, now
	return t, nil
}

// SetTotal records how many items the task has, for the holder of
// owner/token, when that is only known once the work started (a file parsed
// by the worker). It is allowed while no item is decided yet; setting the
// same total again is a no-op, so a resumed worker may repeat it. Anything
// else is a *CountsError.
func (t Task) SetTotal(owner string, token int64, total int64, now time.Time) (Task, error) {
	if err := t.holds("set the total of", owner, token, now); err != nil {
		return t, err
	}
	switch {
	case total == t.Counts.Total:
		return t, nil
	case total < 0 || t.Counts.Done() != 0:
		return t, fmt.Errorf("set the total of task %q: %w", t.ID,
			&CountsError{Counts: Counts{Total: total, Success: t.Counts.Success, Failed: t.Counts.Failed}, Reason: "the total is fixed once items are decided, and never negative"})
	}
	t.Counts.Total, t.UpdatedAt = total, now
	return t, nil
}

// Complete finishes the task as Completed. Every item must be decided
// (Success+Failed == Total, else *CountsError); Failed > 0 is partial success.
func (t Task) Complete(owner string, token int64, now time.Time) (Task, error) {
	if err := t.finishable(Completed, owner, token, now); err != nil {
		return t, err
	}
	if err := t.Counts.Validate(true); err != nil {
		return t, fmt.Errorf("complete task %q: %w", t.ID, err)
	}
	return t.finish(Completed, nil, now), nil
}

// Fail finishes the task as Failed: it could not reach its business end as a
// whole. Counts stay as recorded and need not add up. The summary is checked
// with Summary.Validate.
func (t Task) Fail(owner string, token int64, summary Summary, now time.Time) (Task, error) {
	if err := t.finishable(Failed, owner, token, now); err != nil {
		return t, err
	}
	if err := summary.Validate(); err != nil {
		return t, fmt.Errorf("fail task %q: %w", t.ID, err)
	}
	return t.finish(Failed, &summary, now), nil
}

// Cancel finishes a Pending or Processing task as Cancelled, with the
// CodeCancelled summary. cancellable is the business's answer to "may this
// task be cancelled now"; when false Cancel returns ErrNotCancellable. Any
// lease is released, so the worker's next renew or finish fails.
func (t Task) Cancel(cancellable bool, now time.Time) (Task, error) {
	if err := Transition(t.Status, Cancelled); err != nil {
		return t, fmt.Errorf("cancel task %q: %w", t.ID, err)
	}
	if !cancellable {
		return t, fmt.Errorf("cancel task %q: %w", t.ID, ErrNotCancellable)
	}
	s := SummaryFor(CodeCancelled)
	return t.finish(Cancelled, &s, now), nil
}

// RecoverExpired puts a Processing task whose lease ran out (at or after
// ExpiresAt) back to Pending so any worker may claim it again. Counts and
// StartedAt are kept: the next worker resumes from the business facts. A
// live lease yields lease.ErrHeld.
func (t Task) RecoverExpired(now time.Time) (Task, error) {
	if t.Status != Processing {
		return t, fmt.Errorf("recover task %q: %w", t.ID, &StatusError{Op: "recover", Status: t.Status, Want: Processing})
	}
	if !t.Lease.Claimable(now) {
		return t, fmt.Errorf("recover task %q: %w (owner %q until %s)", t.ID, lease.ErrHeld,
			t.Lease.Owner, t.Lease.ExpiresAt.Format(time.RFC3339Nano))
	}
	t.Status, t.UpdatedAt = Pending, now
	t.Lease = lease.Lease{Token: t.Lease.Token} // keep the token so the next claim fences this one
	return t, nil
}

// holds checks that the task is Processing and owner/token holds a live lease.
func (t Task) holds(op, owner string, token int64, now time.Time) error {
	if t.Status != Processing {
		return fmt.Errorf("%s task %q: %w", op, t.ID, &StatusError{Op: op, Status: t.Status, Want: Processing})
	}
	if err := t.Lease.Check(owner, token, now); err != nil {
		return fmt.Errorf("%s task %q by %q (token %d): %w", op, t.ID, owner, token, err)
	}
	return nil
}

// finishable checks the move to status `to` and the caller's lease.
func (t Task) finishable(to Status, owner string, token int64, now time.Time) error {
	if err := Transition(t.Status, to); err != nil {
		return fmt.Errorf("finish task %q as %s: %w", t.ID, to, err)
	}
	if err := t.Lease.Check(owner, token, now); err != nil {
		return fmt.Errorf("finish task %q as %s by %q (token %d): %w", t.ID, to, owner, token, err)
	}
	return nil
}

func (t Task) finish(to Status, summary *Summary, now time.Time) Task {
	t.Status, t.Summary, t.UpdatedAt = to, summary, now
	t.FinishedAt = &now
	t.Lease = lease.Lease{Token: t.Lease.Token}
	return t
}
