package contracttests

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/periodic"
	"github.com/july/template/core/ports"
)

// PeriodicCommandStoreFixture is one isolated periodic-command store and
// the outbox it appends to.
type PeriodicCommandStoreFixture struct {
	// Store is the implementation under test.
	Store ports.PeriodicCommandStore
	// Stored returns the event_id of every event in the store's outbox.
	Stored func(t *testing.T) []string
	// Append stores an event in that outbox directly (as business code or
	// an operator would).
	Append func(t *testing.T, ev outbox.Event)
	// Hold takes the command's state as another caller in the middle of
	// its Advance would, until release is called.
	Hold func(t *testing.T, command string) (release func())
	// Outage is required: see Outage.
	Outage Outage[ports.PeriodicCommandStore]
}

// RunPeriodicCommandStore checks a ports.PeriodicCommandStore against the
// contract on the port, driving it with core/periodic's rule (Due, Build)
// as periodic.Runner does.
func RunPeriodicCommandStore(t *testing.T, newFixture func(t *testing.T) PeriodicCommandStoreFixture) {
	t.Helper()
	cmd, err := periodic.Command{
		Name: "contract.tick", Schedule: periodic.Every(time.Minute), CatchUp: periodic.Each, MaxCatchUp: 3,
		Event: func(o periodic.Occurrence) (outbox.NewParams, error) {
			return outbox.NewParams{EventType: "contract.tick", PayloadVersion: 1, AggregateType: "tick", AggregateID: "contract.tick",
				ResourceType: "tick", ResourceID: o.ID, Payload: map[string]any{"scheduled_at": o.At}}, nil
		},
	}.Validate()
	require.NoError(t, err)
	start := time.Date(2026, 12, 6, 0, 0, 30, 0, time.UTC)
	decide := func(t *testing.T, now time.Time) ports.PeriodicDecideFunc {
		return func(cursor time.Time) ([]outbox.Event, time.Time, error) {
			p := periodic.Due(cmd, cursor, now)
			var evs []outbox.Event
			for _, o := range p.Commit {
				ev, err := periodic.Build(cmd, o, now)
				require.NoError(t, err)
				evs = append(evs, ev)
			}
			return evs, p.Cursor, nil
		}
	}
	idsUntil := func(last time.Time) []string {
		var ids []string
		for at := start.Truncate(time.Minute).Add(time.Minute); !at.After(last); at = at.Add(time.Minute) {
			ids = append(ids, periodic.ID(cmd.Name, at))
		}
		slices.Sort(ids)
		return ids
	}
	stored := func(t *testing.T, f PeriodicCommandStoreFixture) []string {
		ids := f.Stored(t)
		slices.Sort(ids)
		return ids
	}

	t.Run("Advance/FirstSightStartsAtNow", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		res, err := f.Store.Advance(t.Context(), cmd.Name, start, func(time.Time) ([]outbox.Event, time.Time, error) {
			t.Fatal("rule: a command without state is created at now; decide does not run")
			return nil, time.Time{}, nil
		})
		require.NoError(t, err)
		require.Equal(t, ports.PeriodicAdvance{Created: true}, res)
		var seen time.Time
		_, err = f.Store.Advance(t.Context(), cmd.Name, start.Add(time.Second), func(cursor time.Time) ([]outbox.Event, time.Time, error) {
			seen = cursor
			return nil, cursor, nil
		})
		require.NoError(t, err)
		requireTime(t, start, seen, "rule: the first cursor is the time of the first sight")
		require.Empty(t, f.Stored(t))
	})

	t.Run("Advance/ConcurrentCallersCommitEachOccurrenceOnce", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		_, err := f.Store.Advance(t.Context(), cmd.Name, start, nil)
		require.NoError(t, err)
		now := start
		for step := range 12 {
			now = now.Add(time.Duration(20+step%3*50) * time.Second)
			var wg sync.WaitGroup
			for range 6 {
				wg.Go(func() {
					_, err := f.Store.Advance(t.Context(), cmd.Name, now, decide(t, now))
					require.NoError(t, err)
				})
			}
			wg.Wait()
		}
		// Each catches up at most 3 per pass; a few more passes finish it.
		for range 5 {
			_, err := f.Store.Advance(t.Context(), cmd.Name, now, decide(t, now))
			require.NoError(t, err)
		}
		require.Equal(t, idsUntil(now), stored(t, f), "rule: every occurrence once, none missing, whoever committed it")
	})

	t.Run("Advance/AnEventAlreadyStoredIsAbsorbed", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		_, err := f.Store.Advance(t.Context(), cmd.Name, start, nil)
		require.NoError(t, err)
		at := start.Truncate(time.Minute).Add(time.Minute)
		ev, err := periodic.Build(cmd, periodic.Occurrence{Command: cmd.Name, At: at, ID: periodic.ID(cmd.Name, at)}, start)
		require.NoError(t, err)
		f.Append(t, ev)
		now := at.Add(90 * time.Second)
		res, err := f.Store.Advance(t.Context(), cmd.Name, now, decide(t, now))
		require.NoError(t, err, "rule: a duplicate event_id never aborts the pass")
		require.Equal(t, ports.PeriodicAdvance{Appended: 1, Existing: 1}, res)
		require.Equal(t, idsUntil(now), stored(t, f))
	})

	t.Run("Advance/FailuresStoreNothing", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		_, err := f.Store.Advance(t.Context(), cmd.Name, start, nil)
		require.NoError(t, err)
		now := start.Add(5 * time.Minute)
		boom := errors.New("boom")
		_, err = f.Store.Advance(t.Context(), cmd.Name, now, func(cursor time.Time) ([]outbox.Event, time.Time, error) {
			evs, next, _ := decide(t, now)(cursor)
			return evs, next, boom
		})
		require.ErrorIs(t, err, boom, "rule: decide's error is returned")
		_, err = f.Store.Advance(t.Context(), cmd.Name, now, func(cursor time.Time) ([]outbox.Event, time.Time, error) {
			return nil, cursor.Add(-time.Second), nil
		})
		require.Error(t, err, "rule: a cursor moved backwards is refused")
		require.Empty(t, f.Stored(t), "rule: a failed Advance stores nothing")
		var seen time.Time
		_, err = f.Store.Advance(t.Context(), cmd.Name, now, func(cursor time.Time) ([]outbox.Event, time.Time, error) {
			seen = cursor
			return nil, cursor, nil
		})
		require.NoError(t, err)
		requireTime(t, start, seen, "rule: a failed Advance leaves the cursor")
	})

	t.Run("Outage/EveryMethodFailsPromptly", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		require.NotNil(t, f.Outage, "PeriodicCommandStoreFixture.Outage is required: %s", OutageRule)
		_, err := f.Store.Advance(t.Context(), cmd.Name, start, nil)
		require.NoError(t, err)
		down, restore := f.Outage(t, f.Store)
		now := start.Add(5 * time.Minute)
		requireUnavailable(t, map[string]outageCall{
			"Advance": func(ctx context.Context) error {
				_, err := down.Advance(ctx, cmd.Name, now, decide(t, now))
				return err
			},
		})
		restore()
		require.Empty(t, f.Stored(t), OutageRule)
	})

	t.Run("Advance/HeldIsBusy", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		_, err := f.Store.Advance(t.Context(), cmd.Name, start, nil)
		require.NoError(t, err)
		release := f.Hold(t, cmd.Name)
		now := start.Add(5 * time.Minute)
		res, err := f.Store.Advance(t.Context(), cmd.Name, now, func(time.Time) ([]outbox.Event, time.Time, error) {
			t.Error("rule: decide does not run while another caller holds the command")
			return nil, time.Time{}, nil
		})
		require.NoError(t, err)
		require.Equal(t, ports.PeriodicAdvance{Busy: true}, res, "rule: a held command is skipped, not waited for")
		release()
		res, err = f.Store.Advance(t.Context(), cmd.Name, now, decide(t, now))
		require.NoError(t, err)
		require.Equal(t, 3, res.Appended, "after the release the next caller does the work")
	})
}
