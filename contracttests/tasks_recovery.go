package contracttests

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/tasks"
)

// RunTaskRecovery checks a ports.TaskTable's Recover: newTable must return
// a table over an empty task table that no other case shares, whose
// Recover calls deliver for each task it returns to Pending.
func RunTaskRecovery(t *testing.T, newTable func(t *testing.T, deliver func(ctx context.Context, id string) error) ports.TaskTable) {
	t.Helper()
	// deliveries records deliver's calls; failOn makes the call for that
	// id fail.
	type deliveries struct {
		mu     sync.Mutex
		ids    []string
		failOn string
	}
	setup := func(t *testing.T) (*taskBundle, ports.TaskTable, *deliveries) {
		d := &deliveries{}
		tt := newTable(t, func(_ context.Context, id string) error {
			d.mu.Lock()
			defer d.mu.Unlock()
			if id == d.failOn {
				return errors.New("the queue refused it")
			}
			d.ids = append(d.ids, id)
			return nil
		})
		b := newTaskBundle(t, func(*testing.T) ports.TaskStore { return tt.Store })
		for i := range 3 {
			b.claimed(fmt.Sprintf("r%d", i), 1, "crashed-worker")
		}
		b.claim(b.create("live", 1).ID, "worker-b", taskT0.Add(taskLease))
		return b, tt, d
	}

	t.Run("Recover/DeliversEachRecoveredTask", func(t *testing.T) {
		t.Parallel()
		b, tt, d := setup(t)
		at := taskT0.Add(taskLease)
		ids, err := tt.Recover(b.ctx, at, 2)
		require.NoError(t, err)
		more, err := tt.Recover(b.ctx, at, 2)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"r0", "r1", "r2"}, append(ids, more...), "rule: each expired task is recovered once, at most limit per call")
		require.ElementsMatch(t, []string{"r0", "r1", "r2"}, d.ids, "rule: each recovered task is delivered")
		for _, id := range d.ids {
			require.Equal(t, tasks.Pending, b.get(id).Status)
		}
		require.Equal(t, tasks.Processing, b.get("live").Status, "a live lease is left alone")
	})

	t.Run("Recover/FailedDeliveryChangesNothing", func(t *testing.T) {
		t.Parallel()
		b, tt, d := setup(t)
		at := taskT0.Add(taskLease)
		d.failOn = "r1"
		_, err := tt.Recover(b.ctx, at, 10)
		require.Error(t, err, "rule: a failed delivery fails the call")
		for i := range 3 {
			require.Equal(t, tasks.Processing, b.get(fmt.Sprintf("r%d", i)).Status, "rule: a failed call changes nothing: r%d stays expired", i)
		}
		d.failOn = ""
		ids, err := tt.Recover(b.ctx, at, 10)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"r0", "r1", "r2"}, ids, "rule: the next call recovers them all")
	})
}
