package contracttests

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/ports"
)

// QueueInventoryFixture is one isolated queue seen through its publisher
// and its ports.QueueInventory, with hooks that move or lose its tasks.
type QueueInventoryFixture struct {
	Inventory ports.QueueInventory
	Publisher ports.Publisher
	// Archive moves a held task to the archive (its consumer gave up).
	Archive func(t *testing.T, eventID string)
	// LoseAll makes the queue forget every task (a flush, a restart
	// without persistence).
	LoseAll func(t *testing.T)
	// LoseList, when the queue keeps a list apart from its task records,
	// drops the list of pending tasks and keeps the records (an eviction
	// of one key). Nil when the queue cannot lose them apart.
	LoseList func(t *testing.T)
	// Outage is required: see Outage.
	Outage Outage[ports.QueueInventory]
}

// RunQueueInventory checks a ports.QueueInventory: the answers the outbox
// reconciler trusts to tell a lost task from one still on its way.
func RunQueueInventory(t *testing.T, newFixture func(t *testing.T) QueueInventoryFixture) {
	t.Helper()

	states := func(t *testing.T, f QueueInventoryFixture, ids ...string) []ports.QueueState {
		t.Helper()
		got, err := f.Inventory.TaskStates(t.Context(), ids)
		require.NoError(t, err)
		require.Len(t, got, len(ids), "one state per id, in order")
		return got
	}

	t.Run("TaskStates/HeldAndMissing", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		held, archived, never := envelope(t, 11), envelope(t, 12), envelope(t, 13)
		requirePublished(t, f.Publisher, held, archived)
		f.Archive(t, archived.EventID)
		require.Equal(t, []ports.QueueState{ports.QueuePending, ports.QueueArchived, ports.QueueMissing},
			states(t, f, held.EventID, archived.EventID, never.EventID),
			"rule: a published task is held (pending), an archived one archived, one never published missing")
		got, err := f.Inventory.TaskStates(t.Context(), nil)
		require.NoError(t, err)
		require.Empty(t, got)
	})

	t.Run("TaskStates/LostTasksAreMissingAndPublishAgain", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		a, b := envelope(t, 14), envelope(t, 15)
		requirePublished(t, f.Publisher, a, b)
		f.LoseAll(t)
		require.Equal(t, []ports.QueueState{ports.QueueMissing, ports.QueueMissing}, states(t, f, a.EventID, b.EventID),
			"rule: a task the queue forgot is missing")
		requirePublished(t, f.Publisher, a)
		require.Equal(t, []ports.QueueState{ports.QueuePending, ports.QueueMissing}, states(t, f, a.EventID, b.EventID),
			"rule: a missing task published again is held again, not absorbed")
	})

	t.Run("TaskStates/RecordsLeftByALostListAreMissing", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		if f.LoseList == nil {
			return // the queue has no list apart from its records
		}
		a, b := envelope(t, 16), envelope(t, 17)
		requirePublished(t, f.Publisher, a, b)
		f.LoseList(t)
		require.Equal(t, []ports.QueueState{ports.QueueMissing, ports.QueueMissing}, states(t, f, a.EventID, b.EventID),
			"rule: a task no worker can reach (its list is gone) is missing")
		requirePublished(t, f.Publisher, a)
		require.Equal(t, []ports.QueueState{ports.QueuePending}, states(t, f, a.EventID),
			"rule: and publishing it again enqueues it")
	})

	t.Run("Outage/TaskStatesUnavailable", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		requireOutageHook(t, f.Outage == nil, "QueueInventoryFixture.Outage")
		env := envelope(t, 18)
		requirePublished(t, f.Publisher, env)
		down, restore := f.Outage(t, f.Inventory)
		requireUnavailable(t, map[string]outageCall{
			"TaskStates": func(ctx context.Context) error { _, err := down.TaskStates(ctx, []string{env.EventID}); return err },
		})
		restore()
		require.Equal(t, []ports.QueueState{ports.QueuePending}, states(t, f, env.EventID))
	})
}
