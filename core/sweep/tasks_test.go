package sweep_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/startstop"
	"github.com/july/template/core/sweep"
	"github.com/july/template/core/tasks"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time                         { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) After(d time.Duration) <-chan time.Time { return time.After(time.Millisecond) }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// queue records deliveries; failing makes EnqueueFunc fail.
type queue struct {
	mu      sync.Mutex
	ids     []string
	failing bool
}

func (q *queue) enqueue(_ context.Context, id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failing {
		return fmt.Errorf("enqueue %s: %w", id, ports.ErrUnavailable)
	}
	q.ids = append(q.ids, id)
	return nil
}

func (q *queue) delivered() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.ids)
}

func (q *queue) setFailing(f bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.failing = f
}

func TestTaskRecovery(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		clock     *clock
		store     *memory.TaskStore
		queue     *queue
		recovered map[string]int
		failed    map[string]int
		sweep     *sweep.TaskRecovery
	}
	setup := func(t *testing.T, batch int, extra ...ports.TaskTable) *testBundle {
		t.Helper()
		b := &testBundle{clock: &clock{now: t0}, store: memory.NewTaskStore(), queue: &queue{},
			recovered: map[string]int{}, failed: map[string]int{}}
		var mu sync.Mutex
		tables := append([]ports.TaskTable{b.store.TaskTable("a", b.queue.enqueue)}, extra...)
		s, err := sweep.NewTaskRecovery(tables, b.clock, sweep.TaskRecoveryConfig{
			Batch:             batch,
			RecoveredFunc:     func(name string, n int) { mu.Lock(); b.recovered[name] += n; mu.Unlock() },
			EnqueueFailedFunc: func(name string) { mu.Lock(); b.failed[name]++; mu.Unlock() },
		})
		require.NoError(t, err)
		b.sweep = s
		return b
	}
	claimed := func(t *testing.T, store ports.TaskStore, id string, leaseFor time.Duration) {
		t.Helper()
		_, err := store.Create(t.Context(), id, 1, t0)
		require.NoError(t, err)
		_, err = store.Claim(t.Context(), id, "crashed-worker", leaseFor, t0)
		require.NoError(t, err)
	}

	t.Run("RecoversExpiredAndDeliversAgain", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 2)
		for i := range 5 {
			claimed(t, b.store, fmt.Sprintf("x%d", i), time.Minute)
		}
		claimed(t, b.store, "live", time.Hour)

		n, err := b.sweep.RunOnce(t.Context())
		require.NoError(t, err)
		require.Zero(t, n, "rule: nothing is recovered while leases are live")

		b.clock.Advance(time.Minute)
		n, err = b.sweep.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, 5, n, "rule: every expired task is recovered, in batches of 2")
		require.ElementsMatch(t, []string{"x0", "x1", "x2", "x3", "x4"}, b.queue.delivered(), "rule: each recovered task is delivered again")
		require.Equal(t, 5, b.recovered["a"], "metric")
		for i := range 5 {
			got, err := b.store.Get(t.Context(), fmt.Sprintf("x%d", i))
			require.NoError(t, err)
			require.Equal(t, tasks.Pending, got.Status, "rule: a recovered task is claimable again")
		}
		live, err := b.store.Get(t.Context(), "live")
		require.NoError(t, err)
		require.Equal(t, tasks.Processing, live.Status, "a live lease is left alone")
	})

	t.Run("FailedDeliveryIsRetriedNextPass", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 10)
		claimed(t, b.store, "y", time.Minute)
		b.clock.Advance(time.Minute)
		b.queue.setFailing(true)
		n, err := b.sweep.RunOnce(t.Context())
		require.Error(t, err, "rule: an undelivered task is reported")
		require.Zero(t, n, "rule: a failed delivery rolls its recovery back")
		require.Equal(t, 1, b.failed["a"], "metric")
		require.Empty(t, b.queue.delivered())
		got, err := b.store.Get(t.Context(), "y")
		require.NoError(t, err)
		require.Equal(t, tasks.Processing, got.Status, "rule: the task stays expired, for the next pass to find")

		b.queue.setFailing(false)
		n, err = b.sweep.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n, "the next pass recovers it")
		require.Equal(t, []string{"y"}, b.queue.delivered(), "rule: the next pass delivers it")
		_, err = b.sweep.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, []string{"y"}, b.queue.delivered(), "rule: delivered once it succeeded")
	})

	// Postgres, not the process, remembers a delivery still owed: a relay
	// that restarts after a failed re-delivery still delivers the task.
	t.Run("FailedDeliverySurvivesARestart", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 10)
		claimed(t, b.store, "r", time.Minute)
		b.clock.Advance(time.Minute)
		b.queue.setFailing(true)
		_, err := b.sweep.RunOnce(t.Context())
		require.Error(t, err, "rule: an undelivered task is reported")

		b.queue.setFailing(false)
		restarted, err := sweep.NewTaskRecovery([]ports.TaskTable{b.store.TaskTable("a", b.queue.enqueue)}, b.clock, sweep.TaskRecoveryConfig{})
		require.NoError(t, err)
		_, err = restarted.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, []string{"r"}, b.queue.delivered(), "rule: the restarted sweep delivers the task its predecessor owed")
	})

	t.Run("OneTableDownDoesNotStopTheOthers", func(t *testing.T) {
		t.Parallel()
		down := memory.NewTaskStore()
		q := &queue{}
		b := setup(t, 10, down.TaskTable("down", q.enqueue))
		claimed(t, b.store, "z", time.Minute)
		down.SetDown(true)
		b.clock.Advance(time.Minute)
		n, err := b.sweep.RunOnce(t.Context())
		require.ErrorIs(t, err, ports.ErrUnavailable)
		require.ErrorContains(t, err, "task table down")
		require.Equal(t, 1, n)
		require.Equal(t, []string{"z"}, b.queue.delivered())
	})

	t.Run("StartRunsUntilStop", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 10)
		claimed(t, b.store, "bg", time.Minute)
		require.NoError(t, b.sweep.Stop(t.Context()), "rule: Stop before Start is safe")
		require.NoError(t, b.sweep.Start(t.Context()))
		b.clock.Advance(time.Minute)
		require.Eventually(t, func() bool { return slices.Equal(b.queue.delivered(), []string{"bg"}) },
			5*time.Second, 5*time.Millisecond, "the background sweep delivers the recovered task")
		require.NoError(t, b.sweep.Stop(t.Context()))
		require.NoError(t, b.sweep.Stop(t.Context()), "rule: Stop twice is safe")
	})

	t.Run("ConfigIsValidated", func(t *testing.T) {
		t.Parallel()
		s := memory.NewTaskStore()
		q := &queue{}
		c := &clock{now: t0}
		for name, tables := range map[string][]ports.TaskTable{
			"duplicate name": {s.TaskTable("a", q.enqueue), s.TaskTable("a", q.enqueue)},
			"empty name":     {s.TaskTable("", q.enqueue)},
			"no store":       {{Name: "a", Recover: s.TaskTable("a", q.enqueue).Recover}},
			"no recover":     {{Name: "a", Store: s}},
		} {
			_, err := sweep.NewTaskRecovery(tables, c, sweep.TaskRecoveryConfig{})
			var ce *startstop.ConfigError
			require.ErrorAs(t, err, &ce, name)
		}
		_, err := sweep.NewTaskRecovery(nil, c, sweep.TaskRecoveryConfig{Every: time.Millisecond})
		require.EqualError(t, err, "sweep: TaskRecoveryConfig.Every 1ms: set it within 1s..1h0m0s", "Every below the minimum")
		_, err = sweep.NewTaskRecovery(nil, nil, sweep.TaskRecoveryConfig{})
		var ce *startstop.ConfigError
		require.ErrorAs(t, err, &ce, "no clock")
		_, err = sweep.NewTaskRecovery(nil, c, sweep.TaskRecoveryConfig{})
		require.NoError(t, err, "no tables is valid: nothing to sweep")
	})
}
