package contracttests

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// RetainedTasksFixture is one isolated queue seen through its publisher
// and its ports.RetainedTasks.
type RetainedTasksFixture struct {
	// Tasks is the implementation under test.
	Tasks ports.RetainedTasks
	// Publisher publishes into the same queue.
	Publisher ports.Publisher
	// Held returns the ids of the tasks the queue holds, in any order.
	Held func(t *testing.T) []string
	// Outage is required: see Outage.
	Outage Outage[ports.RetainedTasks]
}

// RunRetainedTasks checks a ports.RetainedTasks against the contract on
// the port: the rule a replay relies on to run a consumer again.
func RunRetainedTasks(t *testing.T, newFixture func(t *testing.T) RetainedTasksFixture) {
	t.Helper()

	t.Run("Delete/DeletedTaskIsEnqueuedAgain", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		env, other := envelope(t, 1), envelope(t, 2)
		requirePublished(t, f.Publisher, env, other)
		n, err := f.Tasks.Delete(t.Context(), []string{env.EventID})
		require.NoError(t, err)
		require.Equal(t, 1, n, "rule: Delete returns how many tasks it deleted")
		require.Equal(t, []string{other.EventID}, f.Held(t), "rule: only the named task is deleted")
		requirePublished(t, f.Publisher, env)
		held := f.Held(t)
		slices.Sort(held)
		want := []string{env.EventID, other.EventID}
		slices.Sort(want)
		require.Equal(t, want, held, "rule: after Delete the same event_id is enqueued again, not absorbed")
	})

	t.Run("Delete/MissingTaskIsNotAnError", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		n, err := f.Tasks.Delete(t.Context(), []string{envelope(t, 3).EventID, "not-a-task"})
		require.NoError(t, err, "rule: an id the queue does not hold is not an error")
		require.Zero(t, n)
	})

	t.Run("Outage/EveryMethodUnavailableAndNothingChanges", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		requireOutageHook(t, f.Outage == nil, "RetainedTasksFixture.Outage")
		env := envelope(t, 4)
		requirePublished(t, f.Publisher, env)
		down, restore := f.Outage(t, f.Tasks)
		requireUnavailable(t, map[string]outageCall{
			"Delete": func(ctx context.Context) error { _, err := down.Delete(ctx, []string{env.EventID}); return err },
		})
		restore()
		require.Equal(t, []string{env.EventID}, f.Held(t), "after the outage the task is still held: %s", OutageRule)
	})
}

func requirePublished(t *testing.T, p ports.Publisher, envs ...outbox.Envelope) {
	t.Helper()
	for i, err := range p.Publish(t.Context(), envs) {
		require.NoError(t, err, "publish envelope %d", i)
	}
}
