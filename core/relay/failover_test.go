package relay_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
	"github.com/july/template/core/startstop"
)

// switchWatcher is a ports.MasterSwitchWatcher the test drives: each
// string sent on switches is announced as a new master.
type switchWatcher struct{ switches chan string }

func (w *switchWatcher) WatchMasterSwitch(ctx context.Context, onSwitch func(string)) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-w.switches:
			onSwitch(m)
		}
	}
}

// deliveredAt appends n events to store and completes them at at; it
// returns their event ids.
func deliveredAt(t *testing.T, store *memory.OutboxStore, at time.Time, n int) []string {
	t.Helper()
	ctx := t.Context()
	ids := make([]string, n)
	for i := range ids {
		ev, err := outbox.New(outbox.NewParams{EventID: uuid.NewString(), EventType: "order.created", PayloadVersion: 1,
			AggregateType: "order", AggregateID: "o", ResourceType: "order", ResourceID: "o",
			RequestID: "r", CorrelationID: "c", Payload: map[string]any{"n": i}, Now: at.Add(-time.Second)})
		require.NoError(t, err)
		require.NoError(t, store.Append(ctx, ev))
		ids[i] = ev.EventID
	}
	claimed, err := store.Claim(ctx, ports.ClaimParams{Owner: "r1", Limit: n, LeaseFor: time.Minute, Now: at})
	require.NoError(t, err)
	require.Len(t, claimed, n)
	refs := make([]ports.LeaseRef, n)
	for i, ev := range claimed {
		refs[i] = ports.LeaseRef{ID: ev.ID, Token: ev.Lease.Token}
	}
	lost, err := store.Complete(ctx, "r1", at, refs)
	require.NoError(t, err)
	require.Empty(t, lost)
	return ids
}

func TestFailoverRedeliver(t *testing.T) {
	t.Parallel()

	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	type testBundle struct {
		store   *memory.OutboxStore
		watcher *switchWatcher
		logs    *logSink
		mu      sync.Mutex
		signals []ports.LossSignal
	}
	setup := func(t *testing.T, pub ports.Publisher) (*testBundle, *relay.FailoverRedeliver) {
		t.Helper()
		b := &testBundle{store: memory.NewOutboxStore(), watcher: &switchWatcher{switches: make(chan string)}, logs: &logSink{}}
		f, err := relay.NewFailoverRedeliver(b.store, pub, b.watcher, &clock{now: now}, relay.FailoverRedeliverConfig{
			SignalFunc: func(s ports.LossSignal) { b.mu.Lock(); b.signals = append(b.signals, s); b.mu.Unlock() },
			Logger:     slog.New(slog.NewJSONHandler(b.logs, nil)),
		})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, f.Stop(context.Background())) })
		return b, f
	}
	announce := func(t *testing.T, b *testBundle, master string) {
		t.Helper()
		select {
		case b.watcher.switches <- master:
		case <-time.After(5 * time.Second):
			t.Fatal("nobody watches for master switches 5s after Start")
		}
	}

	t.Run("EachSwitchPublishesTheWindowAgainAndSignals", func(t *testing.T) {
		t.Parallel()
		pub := memory.NewPublisher()
		b, f := setup(t, pub)
		old := deliveredAt(t, b.store, now.Add(-2*time.Hour), 3)
		recent := deliveredAt(t, b.store, now.Add(-30*time.Second), 4) // inside DefaultRedeliverWindow of the clock's now
		require.NoError(t, f.Start(t.Context()))

		announce(t, b, "10.0.0.2:6379")
		require.Eventually(t, func() bool { return len(b.logs.lines(t, "published the window's deliveries again")) == 1 },
			5*time.Second, 10*time.Millisecond)
		line := b.logs.lines(t, "published the window's deliveries again")[0]
		require.Equal(t, "10.0.0.2:6379", line["new_master"])
		require.EqualValues(t, len(recent), line["published"])
		var got []string
		for _, env := range pub.Tasks() {
			got = append(got, env.EventID)
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(recent))
		require.Equal(t, want, got, "rule: exactly the events delivered in the window before the switch (by the clock), not %v", old)
		b.mu.Lock()
		require.Equal(t, []ports.LossSignal{{Kind: relay.LossMasterSwitch, Detail: "sentinel announced a new master"}}, b.signals,
			"rule: a switch is a loss signal for the reconciler")
		b.mu.Unlock()

		announce(t, b, "10.0.0.3:6379")
		require.Eventually(t, func() bool { return len(b.logs.lines(t, "published the window's deliveries again")) == 2 },
			5*time.Second, 10*time.Millisecond)
		for _, id := range recent {
			require.Equal(t, 2, pub.Attempts(id), "every switch publishes its window again")
		}

		require.NoError(t, f.Stop(t.Context()))
		select {
		case b.watcher.switches <- "10.0.0.4:6379":
			t.Fatal("a stopped re-publisher still watches for switches")
		case <-time.After(50 * time.Millisecond):
		}
	})

	t.Run("APublishThatKeepsFailingIsReported", func(t *testing.T) {
		t.Parallel()
		b, f := setup(t, downPublisher{})
		deliveredAt(t, b.store, now.Add(-10*time.Second), 2)
		require.NoError(t, f.Start(t.Context()))
		announce(t, b, "10.0.0.2:6379")
		require.Eventually(t, func() bool { return len(b.logs.lines(t, "failed part-way")) == 1 }, 10*time.Second, 10*time.Millisecond)
		line := b.logs.lines(t, "failed part-way")[0]
		require.EqualValues(t, 0, line["published"])
		require.Contains(t, line["error"], ports.ErrUnavailable.Error())
	})
}

func TestNewFailoverRedeliverRefusesBadConfig(t *testing.T) {
	t.Parallel()
	store, pub, w := memory.NewOutboxStore(), memory.NewPublisher(), &switchWatcher{}
	var ce *startstop.ConfigError
	_, err := relay.NewFailoverRedeliver(store, pub, w, ports.SystemClock, relay.FailoverRedeliverConfig{Window: time.Millisecond})
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "Window", ce.Field)
	_, err = relay.NewFailoverRedeliver(store, pub, nil, ports.SystemClock, relay.FailoverRedeliverConfig{})
	require.ErrorAs(t, err, &ce, "a watcher is required")
	_, err = relay.NewFailoverRedeliver(store, pub, w, ports.SystemClock, relay.FailoverRedeliverConfig{})
	require.NoError(t, err, "the zero config is valid")
}
