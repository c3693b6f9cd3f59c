package pgperiodic_test

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/adapters/postgres/pgperiodic"
	"github.com/july/template/contracttests"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/periodic"
	"github.com/july/template/core/ports"
)

// settable is a clock the test moves; every runner reads the same one.
type settable struct{ ns atomic.Int64 }

func (c *settable) Now() time.Time                         { return time.Unix(0, c.ns.Load()).UTC() }
func (c *settable) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (c *settable) Set(t time.Time)                        { c.ns.Store(t.UnixNano()) }

func tick(policy periodic.CatchUp) periodic.Command {
	return periodic.Command{
		Name: "test.tick", Schedule: periodic.Every(time.Minute), CatchUp: policy, MaxCatchUp: 5,
		Event: func(o periodic.Occurrence) (outbox.NewParams, error) {
			return outbox.NewParams{EventType: "test.tick", PayloadVersion: 1, AggregateType: "tick", AggregateID: "test.tick",
				ResourceType: "tick", ResourceID: o.ID, Payload: map[string]any{"scheduled_at": o.At}}, nil
		},
	}
}

// occurrences returns the scheduled times of the stored tick events, in
// order, and fails unless each event's id is periodic.ID of its time.
func occurrences(t *testing.T, db bun.IDB) []time.Time {
	t.Helper()
	var rows []struct {
		EventID   string    `bun:"event_id"`
		At        time.Time `bun:"at"`
		RequestID string    `bun:"request_id"`
	}
	require.NoError(t, db.NewRaw(`SELECT event_id::text, (payload->>'scheduled_at')::timestamptz AS at, request_id
		FROM tb_outbox_event WHERE event_type = 'test.tick' ORDER BY at`).Scan(t.Context(), &rows))
	var out []time.Time
	for _, r := range rows {
		require.Equal(t, periodic.ID("test.tick", r.At), r.EventID, "event_id is the occurrence's stable id")
		require.Equal(t, r.EventID, r.RequestID, "request_id carries the stable command id")
		out = append(out, r.At.UTC())
	}
	return out
}

func newRunner(t *testing.T, db *bun.DB, clock ports.Clock, c periodic.Command) *periodic.Runner {
	t.Helper()
	store, err := pgperiodic.NewStore(db)
	require.NoError(t, err)
	r, err := periodic.NewRunner(store, []periodic.Command{c}, clock, periodic.RunnerConfig{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	return r
}

// Eight runners (eight relays) pass at once at every step of a clock
// that moves in uneven steps, jumps back an hour and then ahead half an
// hour: each minute's occurrence is stored exactly once, none is missing,
// none is stored while the clock is behind the cursor.
func TestConcurrentRunnersCommitEachOccurrenceOnce(t *testing.T) {
	t.Parallel()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	clock := &settable{}
	t0 := time.Date(2026, 12, 6, 0, 0, 30, 0, time.UTC)
	clock.Set(t0)
	runners := make([]*periodic.Runner, 8)
	for i := range runners {
		runners[i] = newRunner(t, db, clock, tick(periodic.Each))
	}
	passAll := func() {
		var wg sync.WaitGroup
		for _, r := range runners {
			wg.Go(func() {
				_, err := r.RunOnce(t.Context())
				require.NoError(t, err)
			})
		}
		wg.Wait()
	}
	passAll() // first sight: the cursor starts at t0
	require.Empty(t, occurrences(t, db), "a new command does not replay the past")

	now := t0
	for i := range 40 {
		now = now.Add(time.Duration(13+i%5*11) * time.Second)
		clock.Set(now)
		passAll()
	}
	steady := occurrences(t, db)
	require.NotEmpty(t, steady)

	clock.Set(now.Add(-time.Hour)) // the clock steps back
	passAll()
	require.Equal(t, steady, occurrences(t, db), "nothing is committed while the clock is behind the cursor")

	clock.Set(now.Add(30 * time.Minute)) // and then ahead: Each catches up, 5 per pass
	for range 10 {
		passAll()
	}
	got := occurrences(t, db)
	want := []time.Time{}
	for at := t0.Truncate(time.Minute).Add(time.Minute); !at.After(now.Add(30 * time.Minute)); at = at.Add(time.Minute) {
		want = append(want, at)
	}
	require.Equal(t, want, got, "every minute from the first to now, once each, no gaps")
}

// The store keeps the port's contract (contracttests.RunPeriodicCommandStore).
func TestPeriodicCommandStoreContract(t *testing.T) {
	t.Parallel()
	contracttests.RunPeriodicCommandStore(t, func(t *testing.T) contracttests.PeriodicCommandStoreFixture {
		db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
		store, err := pgperiodic.NewStore(db)
		require.NoError(t, err)
		return contracttests.PeriodicCommandStoreFixture{
			Store: store,
			Stored: func(t *testing.T) []string {
				var ids []string
				require.NoError(t, db.NewRaw(`SELECT event_id::text FROM tb_outbox_event`).Scan(t.Context(), &ids))
				return ids
			},
			Append: func(t *testing.T, ev outbox.Event) { require.NoError(t, pgoutbox.Append(t.Context(), db, ev)) },
			Hold: func(t *testing.T, command string) func() {
				tx, err := db.BeginTx(t.Context(), nil)
				require.NoError(t, err)
				_, err = tx.ExecContext(t.Context(), `SELECT 1 FROM tb_periodic_command WHERE name = ? FOR UPDATE`, command)
				require.NoError(t, err)
				t.Cleanup(func() { _ = tx.Rollback() })
				return func() { require.NoError(t, tx.Rollback()) }
			},
			Outage: func(t *testing.T, _ ports.PeriodicCommandStore) (ports.PeriodicCommandStore, func()) {
				down, err := pgperiodic.NewStore(testinfra.UnreachableDB(t))
				require.NoError(t, err)
				return down, func() {}
			},
		}
	})
}

// BenchmarkAdvanceNothingDue is what a declared command costs a relay
// between its occurrences: one pass (a transaction with the create-if-
// missing insert and the locked read of the cursor) that finds nothing
// due. docs/performance.md quotes it.
func BenchmarkAdvanceNothingDue(b *testing.B) {
	db := testinfra.NewDB(b, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	store, err := pgperiodic.NewStore(db)
	require.NoError(b, err)
	c, err := tick(periodic.Each).Validate()
	require.NoError(b, err)
	now := time.Date(2026, 12, 6, 0, 0, 1, 0, time.UTC)
	_, err = store.Advance(b.Context(), c.Name, now, nil)
	require.NoError(b, err)
	decide := func(cursor time.Time) ([]outbox.Event, time.Time, error) {
		p := periodic.Due(c, cursor, now)
		return nil, p.Cursor, nil
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := store.Advance(b.Context(), c.Name, now, decide); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdvanceOneOccurrence commits one occurrence per pass: the
// pass above plus the existing-id lookup, the event's insert and the
// cursor's update.
func BenchmarkAdvanceOneOccurrence(b *testing.B) {
	db := testinfra.NewDB(b, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	store, err := pgperiodic.NewStore(db)
	require.NoError(b, err)
	c, err := tick(periodic.Each).Validate()
	require.NoError(b, err)
	now := time.Date(2026, 12, 6, 0, 0, 1, 0, time.UTC)
	_, err = store.Advance(b.Context(), c.Name, now, nil)
	require.NoError(b, err)
	b.ResetTimer()
	for b.Loop() {
		now = now.Add(time.Minute)
		_, err := store.Advance(b.Context(), c.Name, now, func(cursor time.Time) ([]outbox.Event, time.Time, error) {
			p := periodic.Due(c, cursor, now)
			var evs []outbox.Event
			for _, o := range p.Commit {
				ev, err := periodic.Build(c, o, now)
				if err != nil {
					return nil, cursor, err
				}
				evs = append(evs, ev)
			}
			return evs, p.Cursor, nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// Regression (issue 43 item 8): a command first seen by a relay whose
// clock is an hour fast started its cursor at that relay's now, so the
// relays with a right clock committed nothing for that hour (and the
// skipped counter stayed 0). The cursor starts at the database's clock
// (or the relay's, when that is behind): every occurrence after the
// command appeared is committed.
func TestNewCommandCursorStartsAtTheDatabaseClock(t *testing.T) {
	t.Parallel()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	var dbNow time.Time
	require.NoError(t, db.NewRaw(`SELECT now()`).Scan(t.Context(), &dbNow))

	fast := &settable{}
	fast.Set(dbNow.Add(time.Hour))
	_, err := newRunner(t, db, fast, tick(periodic.Each)).RunOnce(t.Context())
	require.NoError(t, err)
	var cursorAhead bool
	require.NoError(t, db.NewRaw(`SELECT cursor_at > now() FROM tb_periodic_command WHERE name = 'test.tick'`).Scan(t.Context(), &cursorAhead))
	require.False(t, cursorAhead, "rule: a new command's cursor never starts ahead of the database's clock")

	right := &settable{}
	right.Set(dbNow.Truncate(time.Minute).Add(3*time.Minute + 30*time.Second))
	_, err = newRunner(t, db, right, tick(periodic.Each)).RunOnce(t.Context())
	require.NoError(t, err)
	want := []time.Time{}
	for at := dbNow.Truncate(time.Minute).Add(time.Minute); !at.After(right.Now()); at = at.Add(time.Minute) {
		want = append(want, at.UTC())
	}
	require.Equal(t, want, occurrences(t, db), "rule: a relay with a right clock commits every occurrence after the command appeared")
}
