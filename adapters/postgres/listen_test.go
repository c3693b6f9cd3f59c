package postgres_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
)

// TestListenerWakesOnAppendUnlessTheSessionOptsOut: an append notifies the
// relay's listener; a session with outbox.notify = off (a bulk writer that
// prefers group commit to wake-up latency) does not.
func TestListenerWakesOnAppendUnlessTheSessionOptsOut(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	var wakes atomic.Int64
	l := postgres.NewListener(db.URL, postgres.OutboxChannel, func() { wakes.Add(1) }, nil)
	require.NoError(t, l.Start(t.Context()))
	t.Cleanup(func() { _ = l.Stop(context.Background()) })
	select {
	case <-l.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("listener never connected")
	}
	require.Eventually(t, func() bool { return wakes.Load() == 1 }, 5*time.Second, 10*time.Millisecond, "one catch-up wake on connect")

	quiet, err := postgres.Open(t.Context(), postgres.Config{URL: db.URL, RuntimeParams: map[string]string{"outbox.notify": "off"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = quiet.Close() })
	require.NoError(t, pgoutbox.Append(t.Context(), quiet, newOutboxEvent(t)))
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, int64(1), wakes.Load(), "a session with outbox.notify = off must not notify")

	require.NoError(t, pgoutbox.Append(t.Context(), db.Bun, newOutboxEvent(t)))
	require.Eventually(t, func() bool { return wakes.Load() == 2 }, 5*time.Second, 10*time.Millisecond, "an ordinary append wakes the relay")
}

// newOutboxEvent returns a valid Pending event with a fresh id.
func newOutboxEvent(t testing.TB) outbox.Event {
	t.Helper()
	id := uuid.NewString()
	ev, err := outbox.New(outbox.NewParams{
		EventID: id, EventType: "order.placed", PayloadVersion: 1,
		AggregateType: "order", AggregateID: id[:8], ResourceType: "order", ResourceID: id[:8],
		RequestID: "req-" + id[:8], Payload: map[string]any{"order_id": id[:8]},
		Now: time.Now(),
	})
	require.NoError(t, err)
	return ev
}

// TestListenerProbe: with a Probe the listener checks that its own NOTIFY
// arrives. Heard: Working. Not heard within ProbeTimeout (a LISTEN through
// a pooler in transaction mode; here a probe that arrives late): one WARN
// naming DATABASE_DIRECT_URL, Notify every FallbackPoll, Working false;
// once the probe arrives, Working again and the fast polling stops.
func TestListenerProbe(t *testing.T) {
	t.Parallel()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	send := func(ctx context.Context, payload string) error {
		_, err := db.Bun.ExecContext(ctx, "SELECT pg_notify(?, ?)", postgres.OutboxChannel, payload)
		return err
	}

	l := postgres.NewListenerWith(postgres.ListenerConfig{URL: db.URL, Channel: postgres.OutboxChannel, Notify: func() {}, Probe: send})
	require.False(t, l.Working(), "not before it connected")
	require.NoError(t, l.Start(t.Context()))
	t.Cleanup(func() { _ = l.Stop(context.Background()) })
	require.Eventually(t, l.Working, 10*time.Second, 5*time.Millisecond, "rule: a direct LISTEN hears its probe")

	var logs testinfra.LogBuffer
	var notified atomic.Int64
	// The late probe is held until the test has seen the deaf behaviour,
	// not for a fixed time a busy machine could outlast.
	release := make(chan struct{})
	late := postgres.NewListenerWith(postgres.ListenerConfig{URL: db.URL, Channel: postgres.OutboxChannel,
		Notify: func() { notified.Add(1) }, ProbeTimeout: 300 * time.Millisecond, FallbackPoll: 50 * time.Millisecond,
		Log: slog.New(slog.NewJSONHandler(&logs, nil)),
		Probe: func(ctx context.Context, payload string) error {
			go func() { // arrives after the timeout
				<-release
				_ = send(context.Background(), payload)
			}()
			return nil
		}})
	require.NoError(t, late.Start(t.Context()))
	t.Cleanup(func() { _ = late.Stop(context.Background()) })
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "DATABASE_DIRECT_URL") }, 10*time.Second, 5*time.Millisecond,
		"rule: a probe that does not come back is reported, naming the variable")
	require.False(t, late.Working())
	before := notified.Load()
	// A listener that hears nothing calls Notify only on notifications:
	// none arrive here, so these wakes are the fallback polling's.
	require.Eventually(t, func() bool { return notified.Load()-before >= 5 }, 30*time.Second, 5*time.Millisecond,
		"rule: a deaf listener wakes the relay every FallbackPoll")
	close(release)
	require.Eventually(t, late.Working, 10*time.Second, 5*time.Millisecond, "rule: the late probe marks it working again")
	before = notified.Load()
	time.Sleep(300 * time.Millisecond)
	require.LessOrEqual(t, notified.Load()-before, int64(1), "rule: no fast polling while notifications arrive")
	recs := logs.Lines(t)
	require.Len(t, recs, 2, "one WARN, one INFO: %s", logs.String())
	require.Equal(t, "WARN", recs[0]["level"])
	require.Equal(t, "INFO", recs[1]["level"])
}
