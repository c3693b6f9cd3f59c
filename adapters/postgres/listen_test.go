package postgres_test

import (
	"context"
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
