package tasks_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/tasks"
)

var t0 = time.Date(2030, 1, 1, 8, 0, 0, 0, time.UTC)

const ttl = time.Minute

func TestNewTask(t *testing.T) {
	t.Parallel()

	got, err := tasks.NewTask("task-1", 5, t0)
	require.NoError(t, err)
	require.Equal(t, tasks.Task{ID: "task-1", Status: tasks.Pending, Counts: tasks.Counts{Total: 5}, UpdatedAt: t0}, got)

	_, err = tasks.NewTask("", 5, t0)
	require.ErrorIs(t, err, tasks.ErrInvalidTask, "empty id")

	_, err = tasks.NewTask("task-1", -1, t0)
	require.ErrorIs(t, err, tasks.ErrInvalidTask, "negative total")
	var ce *tasks.CountsError
	require.ErrorAs(t, err, &ce, "negative total")
}

func TestTaskValidate(t *testing.T) {
	t.Parallel()

	// The terminal-count invariant: only Completed requires every item decided.
	partial := tasks.Counts{Total: 10, Success: 4, Failed: 1}
	full := tasks.Counts{Total: 10, Success: 4, Failed: 6}
	over := tasks.Counts{Total: 10, Success: 8, Failed: 6}
	tests := []struct {
		status  tasks.Status
		counts  tasks.Counts
		wantErr bool
	}{
		{tasks.Pending, partial, false},
		{tasks.Processing, partial, false},
		{tasks.Completed, partial, true},
		{tasks.Completed, full, false},
		{tasks.Failed, partial, false},
		{tasks.Failed, full, false},
		{tasks.Cancelled, partial, false},
		{tasks.Cancelled, full, false},
		{tasks.Pending, over, true},
		{tasks.Processing, over, true},
		{tasks.Completed, over, true},
		{tasks.Failed, over, true},
		{tasks.Cancelled, over, true},
		{0, full, true},
		{6, full, true},
	}
	for _, tt := range tests {
		task := tasks.Task{ID: "t", Status: tt.status, Counts: tt.counts}
		err := task.Validate()
		if tt.wantErr {
			require.ErrorIs(t, err, tasks.ErrInvalidTask, "Validate(%s, %+v)", tt.status, tt.counts)
		} else {
			require.NoError(t, err, "Validate(%s, %+v)", tt.status, tt.counts)
		}
	}
}

func TestTaskLifecycle(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		task  tasks.Task // Processing, claimed by "w1" at t0
		token int64
	}

	setup := func(t *testing.T, total int64) *testBundle {
		t.Helper()

		task, err := tasks.NewTask("task-1", total, t0.Add(-time.Hour))
		require.NoError(t, err)
		task, err = task.Claim("w1", t0, ttl)
		require.NoError(t, err)
		return &testBundle{task: task, token: task.Lease.Token}
	}

	t.Run("ClaimStartsProcessing", func(t *testing.T) {
		t.Parallel()

		b := setup(t, 3)
		require.Equal(t, tasks.Processing, b.task.Status)
		require.Equal(t, lease.Lease{Owner: "w1", Token: 1, ExpiresAt: t0.Add(ttl)}, b.task.Lease)
		require.Equal(t, t0, *b.task.StartedAt)
		require.Equal(t, t0, b.task.UpdatedAt)
		require.Nil(t, b.task.FinishedAt)
	})

	t.Run("ClaimLiveLeaseIsHeld", func(t *testing.T) {
		t.Parallel()

		b := setup(t, 3)
		for _, owner := range []string{"w1", "w2"} {
			got, err := b.task.Claim(owner, t0.Add(ttl-time.Nanosecond), ttl)
			require.ErrorIs(t, err, lease.ErrHeld, "claim by %s just before expiry", owner)
			require.Equal(t, b.task, got)
		}
	})

	t.Run("ClaimInvalidRequest", func(t *testing.T) {
		t.Parallel()

		task, err := tasks.NewTask("task-1", 1, t0)
		require.NoError(t, err)
		got, err := task.Claim("", t0, ttl)
		require.ErrorIs(t, err, lease.ErrInvalid)
		require.Equal(t, task, got)
	})

	t.Run("ExpiryAtExactInstant", func(t *testing.T) {
		t.Parallel()

		b := setup(t, 3)
		expiry := t0.Add(ttl)

		// One nanosecond before expiry the holder still holds.
		_, err := b.task.Renew("w1", b.token, expiry.Add(-time.Nanosecond), ttl)
		require.NoError(t, err, "renew 1ns before expiry")
		_, err = b.task.RecoverExpired(expiry.Add(-time.Nanosecond))
		require.ErrorIs(t, err, lease.ErrHeld, "recover 1ns before expiry")

		// At the exact instant it is expired: the holder may not act, anyone
		// may recover or take over.
		_, err = b.task.Renew("w1", b.token, expiry, ttl)
		require.ErrorIs(t, err, lease.ErrExpired, "renew at expiry")
		_, err = b.task.RecordProgress("w1", b.token, 1, 0, expiry)
		require.ErrorIs(t, err, lease.ErrExpired, "record at expiry")
		_, err = b.task.Complete("w1", b.token, expiry)
		require.ErrorIs(t, err, lease.ErrExpired, "complete at expiry")

		recovered, err := b.task.RecoverExpired(expiry)
		require.NoError(t, err, "recover at expiry")
		require.Equal(t, tasks.Pending, recovered.Status)

		taken, err := b.task.Claim("w2", expiry, ttl)
		require.NoError(t, err, "takeover at expiry")
		require.Equal(t, lease.Lease{Owner: "w2", Token: 2, ExpiresAt: expiry.Add(ttl)}, taken.Lease)
	})

	t.Run("StaleHolderAfterTakeover", func(t *testing.T) {
		t.Parallel()

		b := setup(t, 2)
		b.task, _ = b.task.RecordProgress("w1", b.token, 1, 0, t0.Add(time.Second))
		later := t0.Add(ttl + time.Second)
		taken, err := b.task.Claim("w2", later, ttl)
		require.NoError(t, err)
		require.Equal(t, t0, *taken.StartedAt, "StartedAt is set once")
		require.Equal(t, tasks.Counts{Total: 2, Success: 1}, taken.Counts, "takeover keeps counts")

		// The stale worker, even with its old token and even by the same name,
		// touches nothing.
		for _, who := range []struct {
			owner string
			token int64
		}{{"w1", b.token}, {"w2", b.token}, {"w1", taken.Lease.Token}} {
			taken2, _ := taken.RecordProgress("w2", taken.Lease.Token, 1, 0, later)
			_, err := taken2.Complete(who.owner, who.token, later)
			require.ErrorIs(t, err, lease.ErrLost, "complete by %+v", who)
			_, err = taken.Fail(who.owner, who.token, tasks.SummaryFor(tasks.CodeInfraUnavailable), later)
			require.ErrorIs(t, err, lease.ErrLost, "fail by %+v", who)
			_, err = taken.RecordProgress(who.owner, who.token, 1, 0, later)
			require.ErrorIs(t, err, lease.ErrLost, "record by %+v", who)
			_, err = taken.Renew(who.owner, who.token, later, ttl)
			require.ErrorIs(t, err, lease.ErrLost, "renew by %+v", who)
		}

		// The new holder finishes.
		taken, err = taken.RecordProgress("w2", taken.Lease.Token, 0, 1, later)
		require.NoError(t, err)
		done, err := taken.Complete("w2", taken.Lease.Token, later)
		require.NoError(t, err)
		require.Equal(t, tasks.Completed, done.Status)
	})

	t.Run("RecoverKeepsCountsAndFencesOldToken", func(t *testing.T) {
		t.Parallel()

		b := setup(t, 5)
		b.task, _ = b.task.RecordProgress("w1", b.token, 2, 1, t0.Add(time.Second))
		expiry := t0.Add(ttl)

		rec, err := b.task.RecoverExpired(expiry)
		require.NoError(t, err)
		require.Equal(t, tasks.Pending, rec.Status)
		require.Equal(t, tasks.Counts{Total: 5, Success: 2, Failed: 1}, rec.Counts)
		require.True(t, rec.Lease.Free(), "recovered lease is free")
		require.Equal(t, b.token, rec.Lease.Token, "recovered lease keeps the token")
		require.Equal(t, t0, *rec.StartedAt)
		require.Equal(t, expiry, rec.UpdatedAt)

		_, err = rec.Complete("w1", b.token, expiry)
		var te *tasks.TransitionError
		require.ErrorAs(t, err, &te, "old worker completing a recovered task")

		again, err := rec.Claim("w3", expiry.Add(time.Second), ttl)
		require.NoError(t, err)
		require.Equal(t, b.token+1, again.Lease.Token)
		require.Equal(t, t0, *again.StartedAt, "StartedAt is set once")

		_, err = rec.RecoverExpired(expiry)
		var se *tasks.StatusError
		require.ErrorAs(t, err, &se, "recovering a Pending task")
	})

	t.Run("RenewExtends", func(t *testing.T) {
		t.Parallel()

		b := setup(t, 1)
		at := t0.Add(30 * time.Second)
		got, err := b.task.Renew("w1", b.token, at, ttl)
		require.NoError(t, err)
		require.Equal(t, at.Add(ttl), got.Lease.ExpiresAt)
		require.Equal(t, b.token, got.Lease.Token)
		require.Equal(t, at, got.UpdatedAt)
	})

	t.Run("RecordProgressRefusesPastTotal", func(t *testing.T) {
		t.Parallel()

		b := setup(t, 2)
		got, err := b.task.RecordProgress("w1", b.token, 2, 1, t0)
		var ce *tasks.CountsError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, b.task, got)
	})

	t.Run("CompleteRequiresEveryItem", func(t *testing.T) {
		t.Parallel()

		b := setup(t, 3)
		b.task, _ = b.task.RecordProgress("w1", b.token, 1, 1, t0)
		got, err := b.task.Complete("w1", b.token, t0)
		var ce *tasks.CountsError
		require.ErrorAs(t, err, &ce, "complete with 2 of 3 items")
		require.Equal(t, b.task, got)

		b.task, err = b.task.RecordProgress("w1", b.token, 0, 1, t0)
		require.NoError(t, err)
		at := t0.Add(time.Second)
		done, err := b.task.Complete("w1", b.token, at)
		require.NoError(t, err)
		require.Equal(t, tasks.Completed, done.Status)
		require.Equal(t, tasks.Counts{Total: 3, Success: 1, Failed: 2}, done.Counts, "partial success is Completed")
		require.Equal(t, at, *done.FinishedAt)
		require.Nil(t, done.Summary)
		require.True(t, done.Lease.Free())
		require.NoError(t, done.Validate())
	})

	t.Run("CompleteEmptyTask", func(t *testing.T) {
		t.Parallel()

		b := setup(t, 0)
		done, err := b.task.Complete("w1", b.token, t0)
		require.NoError(t, err)
		require.Equal(t, 100, done.View().Progress)
	})

	t.Run("FailKeepsCounts", func(t *testing.T) {
		t.Parallel()

		b := setup(t, 10)
		b.task, _ = b.task.RecordProgress("w1", b.token, 3, 0, t0)
		sum := tasks.SummaryFor(tasks.CodeInfraUnavailable)
		failed, err := b.task.Fail("w1", b.token, sum, t0)
		require.NoError(t, err)
		require.Equal(t, tasks.Failed, failed.Status)
		require.Equal(t, tasks.Counts{Total: 10, Success: 3}, failed.Counts)
		require.Equal(t, &sum, failed.Summary)
		require.NoError(t, failed.Validate())

		got, err := b.task.Fail("w1", b.token, tasks.Summary{Code: "TASK_X", Message: "pq: boom"}, t0)
		var se *tasks.SummaryError
		require.ErrorAs(t, err, &se, "fail with a leaking summary")
		require.Equal(t, b.task, got)
	})

	t.Run("Cancel", func(t *testing.T) {
		t.Parallel()

		b := setup(t, 3)
		pending, err := tasks.NewTask("task-2", 3, t0)
		require.NoError(t, err)

		for _, task := range []tasks.Task{pending, b.task} {
			got, err := task.Cancel(false, t0)
			require.ErrorIs(t, err, tasks.ErrNotCancellable, "cancel %s when not cancellable", task.Status)
			require.Equal(t, task, got)

			got, err = task.Cancel(true, t0.Add(time.Second))
			require.NoError(t, err, "cancel %s", task.Status)
			require.Equal(t, tasks.Cancelled, got.Status)
			require.Equal(t, tasks.CodeCancelled, got.Summary.Code)
			require.Equal(t, t0.Add(time.Second), *got.FinishedAt)
			require.True(t, got.Lease.Free())
		}

		cancelled, err := b.task.Cancel(true, t0)
		require.NoError(t, err)
		_, err = cancelled.Complete("w1", b.token, t0)
		require.ErrorIs(t, err, tasks.ErrTerminal, "worker completing a cancelled task")
	})
}

// TestTerminalIsFinal checks that every operation on a finished task fails
// with ErrTerminal and returns the task unchanged, counts included, so a
// duplicate handler cannot redo side effects.
func TestTerminalIsFinal(t *testing.T) {
	t.Parallel()

	finished := func(t *testing.T, to tasks.Status) (tasks.Task, int64) {
		t.Helper()

		task, err := tasks.NewTask("task-1", 2, t0)
		require.NoError(t, err)
		task, err = task.Claim("w1", t0, ttl)
		require.NoError(t, err)
		token := task.Lease.Token
		task, err = task.RecordProgress("w1", token, 1, 1, t0)
		require.NoError(t, err)
		switch to {
		case tasks.Completed:
			task, err = task.Complete("w1", token, t0)
		case tasks.Failed:
			task, err = task.Fail("w1", token, tasks.SummaryFor(tasks.CodeFileUnparsable), t0)
		case tasks.Cancelled:
			task, err = task.Cancel(true, t0)
		}
		require.NoError(t, err, "finish as %s", to)
		require.Equal(t, to, task.Status)
		return task, token
	}

	for _, status := range []tasks.Status{tasks.Completed, tasks.Failed, tasks.Cancelled} {
		t.Run(status.String(), func(t *testing.T) {
			t.Parallel()

			task, token := finished(t, status)
			later := t0.Add(2 * ttl)
			ops := map[string]func() (tasks.Task, error){
				"Claim":          func() (tasks.Task, error) { return task.Claim("w2", later, ttl) },
				"Renew":          func() (tasks.Task, error) { return task.Renew("w1", token, t0, ttl) },
				"RecordProgress": func() (tasks.Task, error) { return task.RecordProgress("w1", token, 0, 0, t0) },
				"Complete":       func() (tasks.Task, error) { return task.Complete("w1", token, t0) },
				"Fail":           func() (tasks.Task, error) { return task.Fail("w1", token, tasks.SummaryFor(""), t0) },
				"Cancel":         func() (tasks.Task, error) { return task.Cancel(true, t0) },
				"RecoverExpired": func() (tasks.Task, error) { return task.RecoverExpired(later) },
			}
			for name, op := range ops {
				got, err := op()
				require.ErrorIs(t, err, tasks.ErrTerminal, "%s on a %s task", name, status)
				require.Equal(t, task, got, "%s on a %s task leaves it unchanged", name, status)
				require.Equal(t, tasks.Counts{Total: 2, Success: 1, Failed: 1}, got.Counts)
				var te *tasks.TransitionError
				var se *tasks.StatusError
				require.True(t, errors.As(err, &te) || errors.As(err, &se), "%s error is typed: %v", name, err)
			}
		})
	}
}

func TestSetTotal(t *testing.T) {
	t.Parallel()

	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tk, err := tasks.NewTask("st-1", 0, now)
	require.NoError(t, err)
	tk, err = tk.Claim("w", now, time.Minute)
	require.NoError(t, err)
	tok := tk.Lease.Token

	tk, err = tk.SetTotal("w", tok, 5, now)
	require.NoError(t, err)
	require.Equal(t, int64(5), tk.Counts.Total)
	same, err := tk.SetTotal("w", tok, 5, now)
	require.NoError(t, err, "repeating the same total is a no-op")
	require.Equal(t, tk, same)

	_, err = tk.SetTotal("thief", tok, 6, now)
	require.ErrorIs(t, err, lease.ErrLost, "only the lease holder sets the total")
	tk, err = tk.RecordProgress("w", tok, 1, 0, now)
	require.NoError(t, err)
	_, err = tk.SetTotal("w", tok, 6, now)
	require.ErrorAs(t, err, new(*tasks.CountsError), "the total is fixed once an item is decided")
}
