package contracttests

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/tasks"
)

// Fixed instants for the task suite; whole seconds survive any store's
// precision.
var (
	taskT0    = time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC)
	taskLease = time.Minute
)

// taskBundle is one case's store plus helpers that fail the test on
// unexpected errors.
type taskBundle struct {
	t     *testing.T
	ctx   context.Context
	store ports.TaskStore
}

func newTaskBundle(t *testing.T, newStore func(t *testing.T) ports.TaskStore) *taskBundle {
	t.Helper()
	return &taskBundle{t: t, ctx: t.Context(), store: newStore(t)}
}

func (b *taskBundle) create(id string, total int64) tasks.Task {
	b.t.Helper()
	got, err := b.store.Create(b.ctx, id, total, taskT0)
	require.NoError(b.t, err, "create task %q total=%d", id, total)
	return got
}

func (b *taskBundle) get(id string) tasks.Task {
	b.t.Helper()
	got, err := b.store.Get(b.ctx, id)
	require.NoError(b.t, err, "get task %q", id)
	return got
}

func (b *taskBundle) claim(id, owner string, now time.Time) tasks.Task {
	b.t.Helper()
	got, err := b.store.Claim(b.ctx, id, owner, taskLease, now)
	require.NoError(b.t, err, "claim task %q by %q at %s", id, owner, now)
	return got
}

// claimed creates a task with total items and claims it for owner at taskT0.
func (b *taskBundle) claimed(id string, total int64, owner string) tasks.Task {
	b.t.Helper()
	b.create(id, total)
	return b.claim(id, owner, taskT0)
}

func (b *taskBundle) progress(tk tasks.Task, success, failed int64, now time.Time) tasks.Task {
	b.t.Helper()
	got, err := b.store.RecordProgress(b.ctx, tk.ID, tk.Lease.Owner, tk.Lease.Token, success, failed, now)
	require.NoError(b.t, err, "record progress +%d/+%d on %q", success, failed, tk.ID)
	return got
}

func (b *taskBundle) complete(tk tasks.Task, now time.Time) tasks.Task {
	b.t.Helper()
	got, err := b.store.Complete(b.ctx, tk.ID, tk.Lease.Owner, tk.Lease.Token, now)
	require.NoError(b.t, err, "complete %q", tk.ID)
	return got
}

// inStatus creates task id and drives it to status s through the store.
func (b *taskBundle) inStatus(id string, s tasks.Status) tasks.Task {
	b.t.Helper()
	tk := b.create(id, 2)
	at := taskT0.Add(time.Second)
	switch s {
	case tasks.Pending:
		return tk
	case tasks.Processing:
		return b.claim(id, "worker-a", taskT0)
	case tasks.Completed:
		tk = b.claim(id, "worker-a", taskT0)
		tk = b.progress(tk, 1, 1, at)
		return b.complete(tk, at)
	case tasks.Failed:
		tk = b.claim(id, "worker-a", taskT0)
		got, err := b.store.Fail(b.ctx, id, tk.Lease.Owner, tk.Lease.Token, tasks.SummaryFor(tasks.CodeInfraUnavailable), at)
		require.NoError(b.t, err, "fail %q", id)
		return got
	case tasks.Cancelled:
		got, err := b.store.Cancel(b.ctx, id, at, true)
		require.NoError(b.t, err, "cancel %q", id)
		return got
	}
	b.t.Fatalf("inStatus: unknown status %d", s)
	return tasks.Task{}
}

// requireTask checks that got is want, comparing times by instant.
func requireTask(t *testing.T, want, got tasks.Task, why string) {
	t.Helper()
	require.Equal(t, want.ID, got.ID, "%s: id", why)
	require.Equal(t, want.Status, got.Status, "%s: status of %q", why, want.ID)
	require.Equal(t, want.Counts, got.Counts, "%s: counts of %q", why, want.ID)
	require.Equal(t, want.Lease.Owner, got.Lease.Owner, "%s: lease owner of %q", why, want.ID)
	require.Equal(t, want.Lease.Token, got.Lease.Token, "%s: fencing token of %q", why, want.ID)
	requireTaskTime(t, want.Lease.ExpiresAt, got.Lease.ExpiresAt, why+": lease expiry")
	require.Equal(t, want.Summary, got.Summary, "%s: summary of %q", why, want.ID)
	requireTaskTimePtr(t, want.StartedAt, got.StartedAt, why+": started_at")
	requireTaskTimePtr(t, want.FinishedAt, got.FinishedAt, why+": finished_at")
	requireTaskTime(t, want.UpdatedAt, got.UpdatedAt, why+": updated_at")
}

func requireTaskTime(t *testing.T, want, got time.Time, what string) {
	t.Helper()
	require.True(t, want.Equal(got), "%s: want %s, got %s", what, want, got)
}

func requireTaskTimePtr(t *testing.T, want, got *time.Time, what string) {
	t.Helper()
	if want == nil || got == nil {
		require.Equal(t, want == nil, got == nil, "%s: want %v, got %v", what, want, got)
		return
	}
	requireTaskTime(t, *want, *got, what)
}

func timePtr(at time.Time) *time.Time { return &at }
