package contracttests

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/tasks"
)

func runTaskFinish(t *testing.T, newStore func(t *testing.T) ports.TaskStore) {
	t.Run("Complete/EveryItemDecidedIsCompleted", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		// All succeed, partial success and all items failed are all Completed:
		// the counts tell them apart, there is no sixth state.
		for _, tc := range []struct {
			name            string
			success, failed int64
		}{{"all-succeed", 3, 0}, {"partial", 2, 1}, {"all-items-failed", 0, 3}} {
			tk := b.progress(b.claimed(tc.name, 3, "worker-a"), tc.success, tc.failed, taskT0)
			at := taskT0.Add(time.Second)
			want := tasks.Task{
				ID: tc.name, Status: tasks.Completed, Counts: tasks.Counts{Total: 3, Success: tc.success, Failed: tc.failed},
				Lease:     lease.Lease{Token: tk.Lease.Token},
				StartedAt: timePtr(taskT0), FinishedAt: timePtr(at), UpdatedAt: at,
			}
			requireTask(t, want, b.complete(tk, at), "Complete returns the finished task")
			requireTask(t, want, b.get(tc.name), "rule: "+tc.name+" is Completed with FinishedAt now and the lease released")
		}
	})

	t.Run("Complete/RequiresEveryItemDecided", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		tk := b.progress(b.claimed("k1", 3, "worker-a"), 1, 1, taskT0)
		_, err := b.store.Complete(b.ctx, "k1", "worker-a", tk.Lease.Token, taskT0.Add(time.Second))
		var ce *tasks.CountsError
		require.ErrorAs(t, err, &ce, "rule: completing with 2 of 3 items decided must fail with *tasks.CountsError")
		requireTask(t, tk, b.get("k1"), "a refused complete changes nothing")
		b.complete(b.progress(tk, 0, 1, taskT0.Add(time.Second)), taskT0.Add(time.Second))
	})

	t.Run("Complete/OnlyCurrentLeaseHolder", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		// Every item is decided, so only the lease can stop a stale Complete.
		stale := b.progress(b.claimed("k2", 2, "worker-a"), 2, 0, taskT0)
		fresh := b.claim("k2", "worker-b", stale.Lease.ExpiresAt)
		at := stale.Lease.ExpiresAt.Add(time.Second)
		for _, who := range []struct {
			owner string
			token int64
		}{{"worker-a", stale.Lease.Token}, {"worker-a", fresh.Lease.Token}, {"worker-c", fresh.Lease.Token}, {"worker-b", stale.Lease.Token}} {
			_, err := b.store.Complete(b.ctx, "k2", who.owner, who.token, at)
			require.ErrorIs(t, err, lease.ErrLost,
				"rule: only the lease holder with the current fencing token may complete a task (%s/token %d completed %s's task)", who.owner, who.token, fresh.Lease.Owner)
			requireTask(t, fresh, b.get("k2"), "rule: only the lease holder with the current fencing token may complete a task")
		}
		b.complete(fresh, at)
	})

	t.Run("Fail/WholeTaskFailureKeepsSummaryAndCounts", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		tk := b.progress(b.claimed("f1", 5, "worker-a"), 1, 0, taskT0)
		at := taskT0.Add(time.Second)
		sum := tasks.SummaryFor(tasks.CodeFileUnparsable)
		got, err := b.store.Fail(b.ctx, "f1", "worker-a", tk.Lease.Token, sum, at)
		require.NoError(t, err, "fail a held task")
		want := tasks.Task{
			ID: "f1", Status: tasks.Failed, Counts: tasks.Counts{Total: 5, Success: 1},
			Lease: lease.Lease{Token: tk.Lease.Token}, Summary: &sum,
			StartedAt: timePtr(taskT0), FinishedAt: timePtr(at), UpdatedAt: at,
		}
		requireTask(t, want, got, "Fail returns the failed task")
		requireTask(t, want, b.get("f1"), "rule: Fail stores Failed with the summary, counts as recorded, FinishedAt now, lease released")
	})

	t.Run("Fail/InvalidSummaryIsRefused", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		tk := b.claimed("f2", 1, "worker-a")
		for _, sum := range []tasks.Summary{
			{Code: "bad", Message: "任务失败"},
			{Code: "TASK_DB_DOWN", Message: "ERROR: relation does not exist (SQLSTATE 42P01)"},
		} {
			_, err := b.store.Fail(b.ctx, "f2", "worker-a", tk.Lease.Token, sum, taskT0)
			var se *tasks.SummaryError
			require.ErrorAs(t, err, &se, "rule: summary %+v must be refused with *tasks.SummaryError", sum)
		}
		requireTask(t, tk, b.get("f2"), "a refused fail changes nothing")
	})

	t.Run("Finish/DuplicateOnTerminalLeavesTaskUnchanged", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		for _, s := range []tasks.Status{tasks.Completed, tasks.Failed, tasks.Cancelled} {
			done := b.inStatus("d-"+s.String(), s)
			// The holder that finished (or held the task before cancel) retries.
			owner, token, at := "worker-a", int64(1), taskT0.Add(2*time.Second)
			_, err := b.store.Complete(b.ctx, done.ID, owner, token, at)
			require.ErrorIs(t, err, tasks.ErrTerminal, "rule: a duplicate complete of a %s task is ErrTerminal", s)
			_, err = b.store.Fail(b.ctx, done.ID, owner, token, tasks.SummaryFor(tasks.CodeSetupFailed), at)
			require.ErrorIs(t, err, tasks.ErrTerminal, "rule: a duplicate fail of a %s task is ErrTerminal", s)
			_, err = b.store.RecordProgress(b.ctx, done.ID, owner, token, 1, 0, at)
			require.ErrorIs(t, err, tasks.ErrTerminal, "rule: progress on a %s task is ErrTerminal", s)
			require.ErrorIs(t, b.store.Renew(b.ctx, done.ID, owner, token, taskLease, at), tasks.ErrTerminal, "renew of a %s task", s)
			requireTask(t, done, b.get(done.ID), "rule: a terminal "+s.String()+" task never changes (counts included)")
		}
	})
}

func runTaskCancelRecover(t *testing.T, newStore func(t *testing.T) ports.TaskStore) {
	t.Run("Cancel/PendingOrProcessingWhenCancellable", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		for _, s := range []tasks.Status{tasks.Pending, tasks.Processing} {
			before := b.inStatus("x-"+s.String(), s)
			at := taskT0.Add(time.Second)
			got, err := b.store.Cancel(b.ctx, before.ID, at, true)
			require.NoError(t, err, "cancel a %s task", s)
			sum := tasks.SummaryFor(tasks.CodeCancelled)
			want := before
			want.Status, want.Summary, want.FinishedAt, want.UpdatedAt = tasks.Cancelled, &sum, timePtr(at), at
			want.Lease = lease.Lease{Token: before.Lease.Token}
			requireTask(t, want, got, "Cancel returns the cancelled task")
			requireTask(t, want, b.get(before.ID), "rule: a cancellable "+s.String()+" task becomes Cancelled with the cancel summary and no lease")
		}
		_, err := b.store.RecordProgress(b.ctx, "x-processing", "worker-a", 1, 1, 0, taskT0.Add(2*time.Second))
		require.ErrorIs(t, err, tasks.ErrTerminal, "rule: the worker's next write after cancel is ErrTerminal")
	})

	t.Run("Cancel/RefusedWhenNotCancellableOrTerminal", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		for _, s := range tasks.Statuses() {
			before := b.inStatus("y-"+s.String(), s)
			_, err := b.store.Cancel(b.ctx, before.ID, taskT0.Add(time.Minute), false)
			if s.Terminal() {
				require.ErrorIs(t, err, tasks.ErrTerminal, "rule: a %s task cannot be cancelled", s)
			} else {
				require.ErrorIs(t, err, tasks.ErrNotCancellable, "rule: a not-cancellable %s task keeps its status", s)
			}
			requireTask(t, before, b.get(before.ID), "a refused cancel changes nothing")
		}
		done := b.get("y-completed")
		_, err := b.store.Cancel(b.ctx, done.ID, taskT0.Add(time.Minute), true)
		var te *tasks.TransitionError
		require.ErrorAs(t, err, &te, "rule: cancelling a finished task is a *tasks.TransitionError even when cancellable")
		require.ErrorIs(t, err, tasks.ErrTerminal)
	})

	t.Run("RecoverExpired/ExpiredProcessingBackToPending", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		expired := b.progress(b.claimed("e1", 4, "worker-a"), 1, 1, taskT0)
		b.create("live", 1)
		live := b.claim("live", "worker-b", taskT0.Add(30*time.Second))
		pending := b.create("idle", 1)
		at := expired.Lease.ExpiresAt
		ids, err := b.store.RecoverExpired(b.ctx, at, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"e1"}, ids, "rule: only the lease expired at or before %s is recovered, and its id is returned", at)
		want := expired
		want.Status, want.Lease, want.UpdatedAt = tasks.Pending, lease.Lease{Token: expired.Lease.Token}, at
		requireTask(t, want, b.get("e1"), "rule: recovery makes the task Pending, releases the lease, keeps counts, StartedAt and token")
		requireTask(t, live, b.get("live"), "a live lease is not recovered")
		requireTask(t, pending, b.get("idle"), "a pending task is untouched")
		again := b.claim("e1", "worker-c", at)
		require.Equal(t, expired.Lease.Token+1, again.Lease.Token, "rule: the next claim after recovery gets token+1")
		requireTaskTimePtr(t, timePtr(taskT0), again.StartedAt, "StartedAt survives recovery and re-claim")
	})

	t.Run("RecoverExpired/RespectsLimit", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		for i := range 3 {
			b.claimed(fmt.Sprintf("l%d", i), 1, "worker-a")
		}
		at := taskT0.Add(taskLease)
		var seen []string
		for _, want := range []int{2, 1, 0} {
			ids, err := b.store.RecoverExpired(b.ctx, at, 2)
			require.NoError(t, err)
			require.Len(t, ids, want, "rule: recover moves at most limit (2) tasks per call, got %v", ids)
			seen = append(seen, ids...)
		}
		require.ElementsMatch(t, []string{"l0", "l1", "l2"}, seen, "rule: every expired task is returned exactly once")
		_, err := b.store.RecoverExpired(b.ctx, at, 0)
		require.Error(t, err, "rule: limit must be at least 1")
	})

	t.Run("RecoverExpired/LongestExpiredFirst", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		for i, name := range []string{"late", "early", "middle"} {
			b.create(name, 1)
			b.claim(name, "worker-a", taskT0.Add(time.Duration([]int{3, 1, 2}[i])*time.Second))
		}
		ids, err := b.store.RecoverExpired(b.ctx, taskT0.Add(time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, []string{"early", "middle", "late"}, ids, "rule: ids come longest expired first")
	})

	t.Run("RecoverExpired/ConcurrentSweepsReturnEachTaskOnce", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		const n = 20
		for i := range n {
			b.claimed(fmt.Sprintf("c%02d", i), 1, "worker-a")
		}
		at := taskT0.Add(taskLease)
		var (
			mu  sync.Mutex
			all []string
			wg  sync.WaitGroup
		)
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				for {
					ids, err := b.store.RecoverExpired(b.ctx, at, 3)
					if err != nil {
						errs <- err
						return
					}
					if len(ids) == 0 {
						return
					}
					mu.Lock()
					all = append(all, ids...)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Len(t, all, n, "rule: %d expired tasks, each returned once by concurrent sweeps: %v", n, all)
		slices.Sort(all)
		require.Len(t, slices.Compact(all), n, "rule: no task is returned twice")
	})
}

func runTaskViewConcurrency(t *testing.T, newStore func(t *testing.T) ports.TaskStore) {
	t.Run("View/StatusesAreOneToFiveWithChineseNames", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		names := map[tasks.Status]string{1: "待处理", 2: "处理中", 3: "已完成", 4: "已失败", 5: "已取消"}
		for _, s := range tasks.Statuses() {
			v := b.get(b.inStatus("v-"+s.String(), s).ID).View()
			require.Equal(t, s, v.Status, "stored status of v-%s", s)
			require.True(t, v.Status >= 1 && v.Status <= 5, "rule: status is always 1..5, got %d", v.Status)
			require.Equal(t, names[s], v.StatusName, "rule: status %d is named %s", s, names[s])
			require.Equal(t, "v-"+s.String(), v.TaskID)
		}
	})

	t.Run("Concurrency/OneOfTenClaimsWins", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		b.create("hot", 1)
		for round, at := range []time.Time{taskT0, taskT0.Add(taskLease)} { // pending, then an expired lease
			var wg sync.WaitGroup
			errs := make([]error, 10)
			for w := range errs {
				wg.Go(func() {
					_, errs[w] = b.store.Claim(b.ctx, "hot", fmt.Sprintf("worker-%d-%d", round, w), taskLease, at)
				})
			}
			wg.Wait()
			wins := 0
			for w, err := range errs {
				if err == nil {
					wins++
					continue
				}
				require.True(t, errors.Is(err, lease.ErrHeld), "round %d worker %d: a losing claim must be lease.ErrHeld, got %v", round, w, err)
			}
			require.Equal(t, 1, wins, "rule: of 10 concurrent claims exactly one wins (round %d)", round)
			require.Equal(t, int64(round+1), b.get("hot").Lease.Token, "one claim, one token increment (round %d)", round)
		}
	})
}

// taskRounds is how many times the task finish race runs.
const taskRounds = 96

// takeoverLatency is the median time a lease takeover takes on this store,
// measured on throwaway tasks.
func (b *taskBundle) takeoverLatency(owner string, at time.Time) time.Duration {
	b.t.Helper()
	var ds []time.Duration
	for i := range 5 {
		id := fmt.Sprintf("probe-%d", i)
		b.claimed(id, 1, owner)
		start := time.Now()
		_, err := b.store.Claim(b.ctx, id, owner, taskLease, at)
		require.NoError(b.t, err, "takeover of an expired lease")
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func runTaskRaces(t *testing.T, newStore func(t *testing.T) ports.TaskStore) {
	// A worker finishes its task (Complete, or Fail) while another claim
	// takes the task over because the lease expired. The takeover has the
	// same owner name (a restarted worker that kept its id), so only the
	// fencing token tells the claims apart; in the stale worker's own clock
	// its lease is still live. Each write is one atomic conditional change,
	// so exactly one of them wins. A store that checks the lease and then
	// writes in a second step lets the stale finish land on the taken-over
	// task.
	t.Run("Concurrent/StaleFinishAfterTakeoverIsRefused", func(t *testing.T) {
		t.Parallel()
		b := newTaskBundle(t, newStore)
		const owner = "worker-a"
		staleNow, takeoverAt := taskT0.Add(taskLease/2), taskT0.Add(taskLease+time.Second)
		takeover := b.takeoverLatency(owner, takeoverAt)
		for round := range taskRounds {
			id := fmt.Sprintf("race-%02d", round)
			stale := b.progress(b.claimed(id, 1, owner), 1, 0, taskT0) // every item decided: only the lease can stop the finish
			useFail := round%2 == 1
			finish := "Complete"
			if useFail {
				finish = "Fail"
			}

			start := make(chan struct{})
			var (
				wg                  sync.WaitGroup
				finishErr, claimErr error
				fresh               tasks.Task
			)
			wg.Go(func() {
				<-start
				// A takeover is only seen once it commits (a WAL flush on a
				// database), so every other pair of rounds starts the finish
				// later instead, sweeping 0 to 1.5x the takeover's latency
				// in sixteenths: one step lands the finish's read just
				// before the commit and its write just after.
				if round/2%2 == 1 {
					time.Sleep(time.Duration(round/4) * takeover / 16)
				}
				if useFail {
					_, finishErr = b.store.Fail(b.ctx, id, owner, stale.Lease.Token, tasks.SummaryFor(tasks.CodeInfraUnavailable), staleNow)
					return
				}
				_, finishErr = b.store.Complete(b.ctx, id, owner, stale.Lease.Token, staleNow)
			})
			wg.Go(func() {
				<-start
				if round/2%2 == 0 {
					time.Sleep(raceOffset(round)) // land at varying points inside the finish in flight
				}
				fresh, claimErr = b.store.Claim(b.ctx, id, owner, taskLease, takeoverAt)
			})
			close(start)
			wg.Wait()

			require.False(t, finishErr == nil && claimErr == nil,
				"rule: a stale lease holder's %s after a takeover is refused: the fencing token of the claim decides (round %d: the task was taken over with token %d, and the %s with token %d succeeded too)",
				finish, round, fresh.Lease.Token, finish, stale.Lease.Token)
			if claimErr == nil {
				require.ErrorIs(t, finishErr, lease.ErrLost, "round %d: the stale %s after a takeover is lease.ErrLost", round, finish)
				done, err := b.store.Complete(b.ctx, id, owner, fresh.Lease.Token, takeoverAt.Add(time.Second))
				require.NoError(t, err,
					"rule: a stale lease holder's %s after a takeover is refused: the new holder keeps the task (round %d)", finish, round)
				require.Equal(t, tasks.Completed, done.Status, "round %d: the new holder completes the task", round)
				continue
			}
			require.NoError(t, finishErr, "round %d: the %s before the takeover succeeds (the takeover failed: %v)", round, finish, claimErr)
			require.ErrorIs(t, claimErr, tasks.ErrTerminal, "round %d: a takeover after the %s finds the task finished", round, finish)
			want := tasks.Completed
			if useFail {
				want = tasks.Failed
			}
			require.Equal(t, want, b.get(id).Status, "round %d: the task ends as the stale holder's %s left it", round, finish)
		}
	})
}
