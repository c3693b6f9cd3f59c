package contracttests

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/tasks"
)

// TaskCaps carries RunTaskStore's outage hook. Every case of the port
// contract is mandatory; nothing here turns cases off.
type TaskCaps struct {
	// Outage takes the store's backing service away (see Outage).
	// Required: the outage case fails without it.
	Outage Outage[ports.TaskStore]
}

// RunTaskStore checks a ports.TaskStore against every documented sentence
// of the port, using only the port. newStore must return a store over an
// empty task table that no other case shares. Cases are parallel and named
// Method/Behaviour; times are fixed instants passed as arguments.
func RunTaskStore(t *testing.T, caps TaskCaps, newStore func(t *testing.T) ports.TaskStore) {
	t.Helper()
	runTaskCreate(t, newStore)
	runTaskClaim(t, newStore)
	runTaskHolder(t, newStore)
	runTaskFinish(t, newStore)
	runTaskCancelRecover(t, newStore)
	runTaskViewConcurrency(t, newStore)
	runTaskRaces(t, newStore)
	runTaskOutage(t, caps, newStore)
}

func runTaskCreate(t *testing.T, newStore func(t *testing.T) ports.TaskStore) {
	t.Run("Create/StoresPendingTask", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		want := tasks.Task{ID: "task-1", Status: tasks.Pending, Counts: tasks.Counts{Total: 3}, UpdatedAt: taskT0}
		requireTask(t, want, b.create("task-1", 3), "Create returns the new task")
		requireTask(t, want, b.get("task-1"), "rule: a created task is Pending with zero counts, no lease (token 0) and UpdatedAt now")
	})

	t.Run("Create/DuplicateIDIsConflictAndKeepsOriginal", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		orig := b.claimed("dup", 3, "worker-a")
		_, err := b.store.Create(b.ctx, "dup", 9, taskT0.Add(time.Second))
		require.ErrorIs(t, err, ports.ErrConflict, "rule: creating an existing id must conflict")
		requireTask(t, orig, b.get("dup"), "rule: a conflicting Create leaves the existing task unchanged")
	})

	t.Run("Create/RefusesInvalidTask", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		for _, tc := range []struct {
			id    string
			total int64
		}{{"", 1}, {"negative", -1}} {
			_, err := b.store.Create(b.ctx, tc.id, tc.total, taskT0)
			require.ErrorIs(t, err, tasks.ErrInvalidTask, "rule: create id=%q total=%d must be refused", tc.id, tc.total)
		}
		_, err := b.store.Get(b.ctx, "negative")
		require.ErrorIs(t, err, ports.ErrNotFound, "a refused Create stores nothing")
	})

	t.Run("Get/UnknownIsNotFound", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		_, err := b.store.Get(b.ctx, "no-such-task")
		require.ErrorIs(t, err, ports.ErrNotFound, "rule: Get of an unknown id is ErrNotFound")
	})
}

func runTaskClaim(t *testing.T, newStore func(t *testing.T) ports.TaskStore) {
	t.Run("Claim/PendingMovesToProcessingWithTokenOne", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		b.create("c1", 4)
		want := tasks.Task{
			ID: "c1", Status: tasks.Processing, Counts: tasks.Counts{Total: 4},
			Lease:     lease.Lease{Owner: "worker-a", Token: 1, ExpiresAt: taskT0.Add(taskLease)},
			StartedAt: timePtr(taskT0), UpdatedAt: taskT0,
		}
		requireTask(t, want, b.claim("c1", "worker-a", taskT0), "Claim returns the claimed task")
		requireTask(t, want, b.get("c1"), "rule: claim moves Pending to Processing with token 1, expiry now+leaseFor and StartedAt now")
	})

	t.Run("Claim/LiveLeaseIsHeld", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		orig := b.claimed("c2", 4, "worker-a")
		almost := taskT0.Add(taskLease - time.Second)
		for _, owner := range []string{"worker-b", "worker-a"} {
			_, err := b.store.Claim(b.ctx, "c2", owner, taskLease, almost)
			require.ErrorIs(t, err, lease.ErrHeld, "rule: a live lease (until %s) is held against %s claiming at %s", orig.Lease.ExpiresAt, owner, almost)
		}
		requireTask(t, orig, b.get("c2"), "a refused claim changes nothing")
	})

	t.Run("Claim/ExpiredLeaseIsTakenOverKeepingCounts", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		first := b.claimed("c3", 5, "worker-a")
		first = b.progress(first, 2, 1, taskT0.Add(time.Second))
		at := first.Lease.ExpiresAt // the instant of expiry already counts as expired
		got := b.claim("c3", "worker-b", at)
		want := tasks.Task{
			ID: "c3", Status: tasks.Processing, Counts: tasks.Counts{Total: 5, Success: 2, Failed: 1},
			Lease:     lease.Lease{Owner: "worker-b", Token: 2, ExpiresAt: at.Add(taskLease)},
			StartedAt: timePtr(taskT0), UpdatedAt: at,
		}
		requireTask(t, want, got, "rule: a lease expired at now is taken over with token+1, keeping counts and StartedAt")
		requireTask(t, want, b.get("c3"), "takeover is stored")
	})

	t.Run("Claim/TerminalIsRefused", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		for _, s := range []tasks.Status{tasks.Completed, tasks.Failed, tasks.Cancelled} {
			done := b.inStatus("c4-"+s.String(), s)
			_, err := b.store.Claim(b.ctx, done.ID, "worker-b", taskLease, taskT0.Add(time.Hour))
			require.ErrorIs(t, err, tasks.ErrTerminal, "rule: a %s task cannot be claimed", s)
			var te *tasks.TransitionError
			require.ErrorAs(t, err, &te, "claiming a %s task is a *tasks.TransitionError", s)
			requireTask(t, done, b.get(done.ID), "a refused claim changes nothing")
		}
	})

	t.Run("Claim/InvalidRequestOrUnknownIDIsRefused", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		orig := b.create("c5", 1)
		for _, tc := range []struct {
			owner string
			ttl   time.Duration
		}{{"", taskLease}, {"worker-a", 0}, {"worker-a", lease.MaxTTL + time.Second}} {
			_, err := b.store.Claim(b.ctx, "c5", tc.owner, tc.ttl, taskT0)
			require.ErrorIs(t, err, lease.ErrInvalid, "rule: claim with owner=%q leaseFor=%s is invalid", tc.owner, tc.ttl)
		}
		requireTask(t, orig, b.get("c5"), "an invalid claim changes nothing")
		_, err := b.store.Claim(b.ctx, "no-such-task", "worker-a", taskLease, taskT0)
		require.ErrorIs(t, err, ports.ErrNotFound, "claim of an unknown id")
	})
}

func runTaskHolder(t *testing.T, newStore func(t *testing.T) ports.TaskStore) {
	t.Run("Renew/ExtendsLiveLeaseKeepingToken", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		tk := b.claimed("r1", 2, "worker-a")
		at := taskT0.Add(30 * time.Second)
		err := b.store.Renew(b.ctx, "r1", "worker-a", tk.Lease.Token, 0, at)
		require.ErrorIs(t, err, lease.ErrInvalid, "rule: a holder renewing for a non-positive leaseFor gets the rule's error")
		require.NoError(t, b.store.Renew(b.ctx, "r1", "worker-a", tk.Lease.Token, taskLease, at), "renew a live lease")
		got := b.get("r1")
		require.Equal(t, tk.Lease.Token, got.Lease.Token, "rule: renew keeps the token")
		requireTaskTime(t, at.Add(taskLease), got.Lease.ExpiresAt, "rule: renew extends the lease to now+leaseFor")
		_, err = b.store.Claim(b.ctx, "r1", "worker-b", taskLease, tk.Lease.ExpiresAt)
		require.ErrorIs(t, err, lease.ErrHeld, "the renewed lease is live past its old expiry")
	})

	t.Run("Renew/ExpiredLeaseIsLost", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		tk := b.claimed("r2", 2, "worker-a")
		err := b.store.Renew(b.ctx, "r2", "worker-a", tk.Lease.Token, taskLease, tk.Lease.ExpiresAt)
		require.ErrorIs(t, err, lease.ErrLost, "rule: a lease expired at now cannot be renewed")
		require.ErrorIs(t, err, lease.ErrExpired, "an expired (not taken over) lease also matches lease.ErrExpired")
		requireTask(t, tk, b.get("r2"), "a refused renew changes nothing")
	})

	t.Run("RecordProgress/AddsDeltas", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		tk := b.claimed("p1", 5, "worker-a")
		b.progress(tk, 2, 1, taskT0.Add(time.Second))
		got := b.progress(tk, 1, 0, taskT0.Add(2*time.Second))
		require.Equal(t, tasks.Counts{Total: 5, Success: 3, Failed: 1}, got.Counts, "rule: progress adds the deltas")
		requireTask(t, got, b.get("p1"), "progress is stored")
		requireTaskTime(t, taskT0.Add(2*time.Second), got.UpdatedAt, "progress sets UpdatedAt")
	})

	t.Run("SetTotal/OnceBeforeAnyItemIsDecided", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		tk := b.claimed("s1", 0, "worker-a")
		got, err := b.store.SetTotal(b.ctx, "s1", "worker-a", tk.Lease.Token, 4, taskT0.Add(time.Second))
		require.NoError(t, err, "rule: the lease holder sets the total while nothing is decided")
		require.Equal(t, int64(4), got.Counts.Total)
		requireTask(t, got, b.get("s1"), "the total is stored")
		again, err := b.store.SetTotal(b.ctx, "s1", "worker-a", tk.Lease.Token, 4, taskT0.Add(2*time.Second))
		require.NoError(t, err, "rule: the same total again is a no-op (a resumed worker)")
		require.Equal(t, int64(4), again.Counts.Total)

		done := b.progress(got, 1, 0, taskT0.Add(3*time.Second))
		_, err = b.store.SetTotal(b.ctx, "s1", "worker-a", tk.Lease.Token, 5, taskT0.Add(4*time.Second))
		require.ErrorAs(t, err, new(*tasks.CountsError), "rule: the total is fixed once an item is decided")
		_, err = b.store.SetTotal(b.ctx, "s1", "thief", tk.Lease.Token, 4, taskT0.Add(4*time.Second))
		require.ErrorIs(t, err, lease.ErrLost, "rule: only the lease holder sets the total")
		requireTask(t, done, b.get("s1"), "refused totals change nothing")
	})

	t.Run("RecordProgress/CannotExceedTotalOrGoNegative", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		tk := b.progress(b.claimed("p2", 3, "worker-a"), 1, 0, taskT0)
		for _, d := range [][2]int64{{2, 1}, {0, 3}, {-1, 0}, {0, -1}} {
			_, err := b.store.RecordProgress(b.ctx, "p2", "worker-a", tk.Lease.Token, d[0], d[1], taskT0.Add(time.Second))
			var ce *tasks.CountsError
			require.ErrorAs(t, err, &ce, "rule: +%d/+%d on {3,1,0} must be refused with *tasks.CountsError", d[0], d[1])
		}
		requireTask(t, tk, b.get("p2"), "refused progress changes nothing")
	})

	t.Run("RecordProgress/StaleHolderAfterTakeoverIsLeaseLost", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		stale := b.claimed("p3", 4, "worker-a")
		fresh := b.claim("p3", "worker-b", stale.Lease.ExpiresAt)
		at := stale.Lease.ExpiresAt.Add(time.Second)
		for _, who := range []struct {
			owner string
			token int64
		}{{"worker-a", stale.Lease.Token}, {"worker-a", fresh.Lease.Token}, {"worker-b", stale.Lease.Token}} {
			_, err := b.store.RecordProgress(b.ctx, "p3", who.owner, who.token, 1, 0, at)
			require.ErrorIs(t, err, lease.ErrLost, "rule: after takeover %s/token %d must not record progress", who.owner, who.token)
			_, err = b.store.Complete(b.ctx, "p3", who.owner, who.token, at)
			require.ErrorIs(t, err, lease.ErrLost, "rule: after takeover %s/token %d must not complete", who.owner, who.token)
			_, err = b.store.Fail(b.ctx, "p3", who.owner, who.token, tasks.SummaryFor(tasks.CodeSetupFailed), at)
			require.ErrorIs(t, err, lease.ErrLost, "rule: after takeover %s/token %d must not fail the task", who.owner, who.token)
			err = b.store.Renew(b.ctx, "p3", who.owner, who.token, taskLease, at)
			require.ErrorIs(t, err, lease.ErrLost, "rule: after takeover %s/token %d must not renew", who.owner, who.token)
		}
		requireTask(t, fresh, b.get("p3"), "stale writes change nothing")
	})

	t.Run("RecordProgress/RecoveredTaskIsLeaseLost", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		tk := b.claimed("p4", 4, "worker-a")
		ids, err := b.store.RecoverExpired(b.ctx, tk.Lease.ExpiresAt, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"p4"}, ids, "recover the expired task")
		_, err = b.store.RecordProgress(b.ctx, "p4", "worker-a", tk.Lease.Token, 1, 0, tk.Lease.ExpiresAt)
		require.ErrorIs(t, err, lease.ErrLost, "rule: a task recovered to Pending is no longer held by its old worker")
		_, err = b.store.Complete(b.ctx, "p4", "worker-a", tk.Lease.Token, tk.Lease.ExpiresAt)
		require.ErrorIs(t, err, lease.ErrLost, "rule: a recovered task cannot be completed by its old worker")
		require.Equal(t, tasks.Pending, b.get("p4").Status, "the task stays Pending")
	})

	t.Run("Holder/UnknownIDIsNotFound", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		_, err := b.store.RecordProgress(b.ctx, "none", "worker-a", 1, 1, 0, taskT0)
		require.ErrorIs(t, err, ports.ErrNotFound, "record progress on an unknown id")
		_, err = b.store.Complete(b.ctx, "none", "worker-a", 1, taskT0)
		require.ErrorIs(t, err, ports.ErrNotFound, "complete an unknown id")
		_, err = b.store.Fail(b.ctx, "none", "worker-a", 1, tasks.SummaryFor(tasks.CodeSetupFailed), taskT0)
		require.ErrorIs(t, err, ports.ErrNotFound, "fail an unknown id")
		require.ErrorIs(t, b.store.Renew(b.ctx, "none", "worker-a", 1, taskLease, taskT0), ports.ErrNotFound, "renew an unknown id")
		_, err = b.store.Cancel(b.ctx, "none", taskT0, true)
		require.ErrorIs(t, err, ports.ErrNotFound, "cancel an unknown id")
	})
}
