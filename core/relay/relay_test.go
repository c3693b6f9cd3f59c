package relay_test

import (
	"context"
	"errors"
	"fmt"
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

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time                         { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type observer struct {
	mu         sync.Mutex
	results    []relay.BatchResult
	recoveries []relay.RecoveryResult
	claims     [][2]int // rows, limit
}

func (o *observer) Claim(rows, limit int) {
	o.mu.Lock()
	o.claims = append(o.claims, [2]int{rows, limit})
	o.mu.Unlock()
}

func (o *observer) Batch(r relay.BatchResult) {
	o.mu.Lock()
	o.results = append(o.results, r)
	o.mu.Unlock()
}
func (o *observer) Recovered(r relay.RecoveryResult) {
	o.mu.Lock()
	o.recoveries = append(o.recoveries, r)
	o.mu.Unlock()
}
func (o *observer) finalFailures() (n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.results {
		n += r.Failed
	}
	return n
}

type testBundle struct {
	clock *clock
	store *memory.OutboxStore
	pub   *memory.Publisher
	obs   *observer
	relay *relay.Relay
}

func setup(t *testing.T, cfg relay.Config) *testBundle {
	t.Helper()
	b := &testBundle{
		clock: &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
		store: memory.NewOutboxStore(),
		pub:   memory.NewPublisher(),
		obs:   &observer{},
	}
	if cfg.Owner == "" {
		cfg.Owner = "relay-test"
	}
	r, err := relay.New(b.store, b.pub, b.clock, cfg, relay.Options{Observer: b.obs})
	require.NoError(t, err)
	b.relay = r
	return b
}

func (b *testBundle) seed(t *testing.T, n int) []string {
	t.Helper()
	ids := make([]string, n)
	evs := make([]outbox.Event, n)
	for i := range n {
		ids[i] = uuid.NewString()
		ev, err := outbox.New(outbox.NewParams{
			EventID: ids[i], EventType: "test.happened", PayloadVersion: 1,
			AggregateType: "order", AggregateID: fmt.Sprint(i), ResourceType: "order", ResourceID: fmt.Sprint(i),
			RequestID: "req-" + ids[i][:8], Payload: map[string]int{"n": i}, Now: b.clock.Now(),
		})
		require.NoError(t, err)
		evs[i] = ev
	}
	require.NoError(t, b.store.Append(t.Context(), evs...))
	return ids
}

func (b *testBundle) drain(t *testing.T) {
	t.Helper()
	for range 1000 {
		n, err := b.relay.RunOnce(t.Context(), b.relay.Owner(0))
		require.NoError(t, err)
		if n == 0 {
			return
		}
	}
	t.Fatal("relay did not drain in 1000 batches")
}

func (b *testBundle) status(t *testing.T, id string) outbox.Event {
	t.Helper()
	ev, err := b.store.Get(t.Context(), id)
	require.NoError(t, err)
	return ev
}

func TestRelayDeliversEveryEventOnce(t *testing.T) {
	t.Parallel()

	b := setup(t, relay.Config{BatchSize: 7})
	ids := b.seed(t, 50)
	b.drain(t)

	require.Len(t, b.pub.Tasks(), 50)
	for _, id := range ids {
		ev := b.status(t, id)
		require.Equal(t, outbox.Delivered, ev.Status, "event %s", id)
		require.Equal(t, 1, b.pub.Attempts(id), "event %s published more than once", id)
	}
	for i, env := range b.pub.Tasks() {
		require.Equal(t, ids[i], env.EventID, "oldest due first")
		require.Equal(t, "req-"+ids[i][:8], env.RequestID, "request id travels unchanged")
	}
}

// Every claim reaches a ClaimObserver, the empty one that ends a drain
// included (Batch never sees it), so a fleet's wasted claims can be counted.
func TestRelayReportsEveryClaim(t *testing.T) {
	t.Parallel()
	b := setup(t, relay.Config{BatchSize: 2})
	b.seed(t, 3)
	b.drain(t)
	b.obs.mu.Lock()
	defer b.obs.mu.Unlock()
	require.Equal(t, [][2]int{{2, 2}, {1, 2}, {0, 2}}, b.obs.claims)
	require.Len(t, b.obs.results, 2, "an empty claim is not a batch")
}

func TestRelayTransientFailureBacksOffThenDelivers(t *testing.T) {
	t.Parallel()

	b := setup(t, relay.Config{Policy: outbox.Policy{MaxAttempts: 5, Backoff: outbox.Backoff{Base: time.Second, Max: time.Minute}}})
	failures := 2
	b.pub.FailFunc = func(outbox.Envelope) error {
		if failures > 0 {
			failures--
			return outbox.Transient("QUEUE_BUSY", "try later")
		}
		return nil
	}
	id := b.seed(t, 1)[0]

	b.drain(t)
	ev := b.status(t, id)
	require.Equal(t, outbox.Pending, ev.Status)
	require.Equal(t, 1, ev.RetryCount)
	require.Equal(t, "QUEUE_BUSY", ev.LastErrorCode)
	require.True(t, ev.NextAttemptAt.After(b.clock.Now()), "a retry must wait for its backoff")

	b.drain(t) // not due yet: nothing happens
	require.Equal(t, 1, b.pub.Attempts(id))

	b.clock.Advance(time.Minute)
	b.drain(t)
	b.clock.Advance(time.Minute)
	b.drain(t)
	ev = b.status(t, id)
	require.Equal(t, outbox.Delivered, ev.Status)
	require.Equal(t, 3, b.pub.Attempts(id))
}

func TestRelayMaxAttemptsAndPermanentFailure(t *testing.T) {
	t.Parallel()

	t.Run("MaxAttempts", func(t *testing.T) {
		t.Parallel()
		b := setup(t, relay.Config{Policy: outbox.Policy{MaxAttempts: 3, Backoff: outbox.Backoff{Base: time.Second, Max: time.Second}}})
		b.pub.FailFunc = func(outbox.Envelope) error { return outbox.Transient("QUEUE_BUSY", "busy") }
		id := b.seed(t, 1)[0]
		for range 5 {
			b.drain(t)
			b.clock.Advance(time.Hour)
		}
		ev := b.status(t, id)
		require.Equal(t, outbox.Failed, ev.Status)
		require.Equal(t, 3, ev.RetryCount)
		require.Equal(t, 3, b.pub.Attempts(id), "no attempt after the budget is spent")
		require.Equal(t, 1, b.obs.finalFailures())
	})

	t.Run("Permanent", func(t *testing.T) {
		t.Parallel()
		b := setup(t, relay.Config{})
		b.pub.FailFunc = func(outbox.Envelope) error { return outbox.Permanent("ENVELOPE_INVALID", "bad") }
		id := b.seed(t, 1)[0]
		b.drain(t)
		ev := b.status(t, id)
		require.Equal(t, outbox.Failed, ev.Status)
		require.Equal(t, "ENVELOPE_INVALID", ev.LastErrorCode)
		require.Equal(t, 1, b.pub.Attempts(id))
	})

	t.Run("UnavailableQueueNeverExhaustsAttempts", func(t *testing.T) {
		t.Parallel()
		b := setup(t, relay.Config{Policy: outbox.Policy{MaxAttempts: 2, Backoff: outbox.Backoff{Base: time.Second, Max: time.Second}}})
		down := true
		b.pub.FailFunc = func(outbox.Envelope) error {
			if down {
				return errors.Join(outbox.Transient("QUEUE_UNAVAILABLE", "redis down"), ports.ErrUnavailable)
			}
			return nil
		}
		id := b.seed(t, 1)[0]
		for range 6 {
			b.drain(t)
			b.clock.Advance(time.Hour)
		}
		require.Equal(t, outbox.Pending, b.status(t, id).Status, "an outage must not fail events for good")
		down = false
		b.drain(t)
		require.Equal(t, outbox.Delivered, b.status(t, id).Status)
	})
}

func TestRelayRecoversCrashedHolder(t *testing.T) {
	t.Parallel()

	b := setup(t, relay.Config{LeaseFor: 10 * time.Second})
	id := b.seed(t, 1)[0]
	// A relay that claims and then dies before publishing or marking.
	claimed, err := b.store.Claim(t.Context(), ports.ClaimParams{Owner: "dead", Limit: 10, LeaseFor: 10 * time.Second, Now: b.clock.Now()})
	require.NoError(t, err)
	require.Len(t, claimed, 1)

	res, err := b.relay.RecoverOnce(t.Context())
	require.NoError(t, err)
	require.Zero(t, res.Recovered(), "a live lease must not be recovered")

	b.clock.Advance(10 * time.Second) // exactly at expiry
	res, err = b.relay.RecoverOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, ports.RecoverResult{Requeued: 1}, res)
	require.Equal(t, []relay.RecoveryResult{{Requeued: 1}}, b.obs.recoveries)
	require.Equal(t, 1, b.status(t, id).RetryCount, "the dead holder's attempt counts")
	b.clock.Advance(outbox.DefaultBackoff.Base) // the first backoff's ceiling
	b.drain(t)

	ev := b.status(t, id)
	require.Equal(t, outbox.Delivered, ev.Status)
	require.Equal(t, id, b.pub.Tasks()[0].EventID, "recovery keeps the event_id")
	lost, err := b.store.Complete(t.Context(), "dead", b.clock.Now(), []ports.LeaseRef{{ID: claimed[0].ID, Token: claimed[0].Lease.Token}})
	require.NoError(t, err)
	require.Equal(t, []int64{claimed[0].ID}, lost, "the dead holder's stale token must not complete the row")
}

// Regression: an event whose handling kills every relay holding it
// (an OOM, a crash) ends Failed with LEASE_EXPIRED after the policy's
// attempts, as retuned while running, and is reported as a final failure,
// instead of being claimed by the next victim forever.
func TestRelayFailsAnEventWhoseHoldersKeepDying(t *testing.T) {
	t.Parallel()

	b := setup(t, relay.Config{LeaseFor: 10 * time.Second, Policy: outbox.Policy{MaxAttempts: 10, Backoff: outbox.Backoff{Base: time.Second, Max: time.Second}}})
	b.relay.Retune(relay.Tuning{MaxAttempts: 3})
	id := b.seed(t, 1)[0]
	for i := 1; i <= 3; i++ {
		b.clock.Advance(time.Second) // past the backoff
		held, err := b.store.Claim(t.Context(), ports.ClaimParams{Owner: fmt.Sprint("victim-", i), Limit: 10, LeaseFor: 10 * time.Second, Now: b.clock.Now()})
		require.NoError(t, err)
		require.Len(t, held, 1, "victim %d claims the event", i)
		b.clock.Advance(10 * time.Second) // and dies holding it
		res, err := b.relay.RecoverOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, res.Recovered())
		require.Equal(t, i, b.status(t, id).RetryCount, "victim %d's attempt counts", i)
	}

	ev := b.status(t, id)
	require.Equal(t, outbox.Failed, ev.Status, "the third lost lease was the last of 3 attempts (the retuned budget)")
	require.Equal(t, outbox.CodeLeaseExpired, ev.LastErrorCode)
	require.Equal(t, []relay.RecoveryResult{{Requeued: 1}, {Requeued: 1}, {FailedEvents: []relay.FailedEvent{
		{EventID: id, EventType: "test.happened", Code: outbox.CodeLeaseExpired, Attempts: 3},
	}}}, b.obs.recoveries, "the observer sees the final failure")
	b.clock.Advance(time.Hour)
	b.drain(t)
	require.Empty(t, b.pub.Tasks(), "a failed event is never published")
}

func TestRelayStartNotifyStop(t *testing.T) {
	t.Parallel()

	b := setup(t, relay.Config{Loops: 3, PollInterval: time.Hour, BatchSize: 5})
	require.NoError(t, b.relay.Stop(t.Context()), "stop before start is safe")
	require.NoError(t, b.relay.Start(t.Context()))
	t.Cleanup(func() { _ = b.relay.Stop(context.Background()) })

	b.seed(t, 23)
	b.relay.Notify()
	require.Eventually(t, func() bool { return len(b.pub.Tasks()) == 23 }, 5*time.Second, 5*time.Millisecond,
		"a notification must wake idle loops even with an hour-long poll interval")

	require.NoError(t, b.relay.Stop(t.Context()))
	require.NoError(t, b.relay.Stop(t.Context()), "stop twice is safe")
	st, err := b.store.Stats(t.Context(), b.clock.Now())
	require.NoError(t, err)
	require.Zero(t, st.Pending)
	require.Zero(t, st.Delivering, "stop must not strand leases")
}

func TestRelayConfigValidation(t *testing.T) {
	t.Parallel()

	store, pub := memory.NewOutboxStore(), memory.NewPublisher()
	clk := &clock{}
	for name, cfg := range map[string]relay.Config{
		"no owner":   {},
		"loops":      {Owner: "r", Loops: 100},
		"batch":      {Owner: "r", BatchSize: 5000},
		"lease":      {Owner: "r", LeaseFor: 2 * time.Hour},
		"poll below": {Owner: "r", PollInterval: time.Microsecond},
	} {
		_, err := relay.New(store, pub, clk, cfg, relay.Options{})
		require.Error(t, err, name)
	}
}

func TestRetentionRemovesOnlyOldDelivered(t *testing.T) {
	t.Parallel()

	b := setup(t, relay.Config{})
	old := b.seed(t, 5)
	b.drain(t)
	b.clock.Advance(48 * time.Hour)
	recent := b.seed(t, 3)
	b.drain(t)
	b.pub.FailFunc = func(outbox.Envelope) error { return outbox.Permanent("ENVELOPE_INVALID", "bad") }
	failed := b.seed(t, 2)
	b.drain(t)
	pending := b.seed(t, 1)
	b.clock.Advance(time.Hour)
	var consumed []ports.Consumption // retention follows consumption
	for _, id := range slices.Concat(old, recent) {
		consumed = append(consumed, ports.Consumption{EventID: id, Consumer: "test", At: b.clock.Now()})
	}
	require.NoError(t, b.store.RecordConsumed(t.Context(), consumed))

	removed := 0
	ret, err := relay.NewRetention(b.store, b.clock, relay.RetentionConfig{Window: 24 * time.Hour, Batch: 2,
		RemovedFunc: func(n int) { removed += n }})
	require.NoError(t, err)
	n, err := ret.RunOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.Equal(t, 5, removed, "the metric hook sees every removed row")
	for _, id := range old {
		_, err := b.store.Get(t.Context(), id)
		require.ErrorIs(t, err, ports.ErrNotFound, "old delivered %s must be gone", id)
	}
	for _, id := range append(append(recent, failed...), pending...) {
		_, err := b.store.Get(t.Context(), id)
		require.NoError(t, err, "event %s must be kept", id)
	}
	_, err = relay.NewRetention(b.store, b.clock, relay.RetentionConfig{Window: time.Minute})
	var ce *startstop.ConfigError
	require.ErrorAs(t, err, &ce, "a window below an hour is refused")
	require.Equal(t, "Window", ce.Field)
}
