package configsvc_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
	"github.com/july/template/core/startstop"
	"github.com/july/template/core/sysconfig"
)

// tickClock stands still; After tells waits that a pass ended and returns
// fire, which the test sends on to let the next pass run.
type tickClock struct {
	now   time.Time
	waits chan time.Duration
	fire  chan time.Time
}

func (c *tickClock) Now() time.Time { return c.now }
func (c *tickClock) After(d time.Duration) <-chan time.Time {
	c.waits <- d
	return c.fire
}

// passEnded waits until the loop waits on the clock, i.e. a pass ended.
func (c *tickClock) passEnded(t *testing.T) {
	t.Helper()
	select {
	case <-c.waits:
	case <-time.After(5 * time.Second):
		t.Fatal("no pass ended within 5s")
	}
}

// recordingPins is a ports.ConfigPins that remembers the calls.
type recordingPins struct {
	mu        sync.Mutex
	announced []time.Time
	pins      []sysconfig.Pin
	withdrawn []string
}

func (p *recordingPins) Announce(_ context.Context, owner string, pins []sysconfig.Pin, now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.announced, p.pins = append(p.announced, now), pins
	return nil
}

func (p *recordingPins) Withdraw(_ context.Context, owner string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.withdrawn = append(p.withdrawn, owner)
	return nil
}

func (p *recordingPins) Active(context.Context, time.Time) (map[string][]sysconfig.Pin, error) {
	return nil, nil
}

func (p *recordingPins) announcements() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.announced)
}

// tunable is a relay whose tuning the test reads.
type tunable struct {
	mu      sync.Mutex
	cur     relay.Tuning
	retunes []relay.Tuning
}

func (r *tunable) Tuning() relay.Tuning { r.mu.Lock(); defer r.mu.Unlock(); return r.cur }
func (r *tunable) Retune(t relay.Tuning) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur, r.retunes = t, append(r.retunes, t)
}
func (r *tunable) retuned() []relay.Tuning {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]relay.Tuning(nil), r.retunes...)
}

func TestRelayTuner(t *testing.T) {
	t.Parallel()

	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	reg := sysconfig.NewRegistry()
	require.NoError(t, configsvc.RegisterTemplateKeys(reg))
	clock := &tickClock{now: now, waits: make(chan time.Duration, 10), fire: make(chan time.Time)}
	svc, err := configsvc.New(reg, memory.NewConfigStore(), nil, clock, configsvc.Options{})
	require.NoError(t, err)

	pinned := relay.Tuning{LeaseFor: 20 * time.Second} // RELAY_LEASE_TTL
	r := &tunable{cur: svc.RelayTuning(t.Context(), pinned)}
	require.Equal(t, relay.Tuning{BatchSize: relay.DefaultBatchSize, LeaseFor: 20 * time.Second, MaxAttempts: relay.DefaultMaxAttempts}, r.cur,
		"RelayTuning: the registered defaults where nothing is stored or pinned")
	pins := &recordingPins{}
	envPins := []sysconfig.Pin{{Key: configsvc.KeyRelayLeaseTTL, Source: "env RELAY_LEASE_TTL", Owner: "relay-1"}}
	tuner, err := configsvc.NewRelayTuner(svc, r, pins, clock, configsvc.RelayTunerConfig{
		Owner: "relay-1", Pinned: pinned, Pins: envPins, Every: time.Second})
	require.NoError(t, err)

	for _, key := range []string{configsvc.KeyRelayBatchSize, configsvc.KeyRelayLeaseTTL} {
		_, err := svc.Update(t.Context(), sysconfig.UpdateRequest{Key: key, Raw: json.RawMessage("60"), Actor: "admin-1"},
			configsvc.Meta{RequestID: "req-12345678"})
		require.NoError(t, err)
	}
	require.NoError(t, tuner.Start(t.Context()))
	clock.passEnded(t)
	require.Equal(t, 1, pins.announcements(), "the pins are announced at Start")
	require.Empty(t, r.retuned(), "the first pass only announces: the relay read the keys when it was built")

	clock.fire <- now // the next pass
	clock.passEnded(t)
	require.Equal(t, []relay.Tuning{{BatchSize: 60, LeaseFor: 20 * time.Second, MaxAttempts: relay.DefaultMaxAttempts}}, r.retuned(),
		"rule: a changed key reaches the running relay; the pinned lease keeps the environment's value")
	require.Equal(t, 2, pins.announcements(), "each pass announces again, so the pins do not go stale")

	clock.fire <- now // nothing changed since
	clock.passEnded(t)

	require.NoError(t, tuner.Stop(t.Context()))
	pins.mu.Lock()
	defer pins.mu.Unlock()
	require.Equal(t, []time.Time{now, now, now}, pins.announced, "announced at the clock's now")
	require.Equal(t, envPins, pins.pins)
	require.Equal(t, []string{"relay-1"}, pins.withdrawn, "rule: a stopped relay withdraws its pins")
	require.Len(t, r.retuned(), 1, "no change, no retune")
}

func TestNewRelayTunerRefusesBadConfig(t *testing.T) {
	t.Parallel()
	reg := sysconfig.NewRegistry()
	require.NoError(t, configsvc.RegisterTemplateKeys(reg))
	svc, err := configsvc.New(reg, memory.NewConfigStore(), nil, ports.SystemClock, configsvc.Options{})
	require.NoError(t, err)
	var ce *startstop.ConfigError
	_, err = configsvc.NewRelayTuner(svc, &tunable{}, &recordingPins{}, ports.SystemClock, configsvc.RelayTunerConfig{})
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "Owner", ce.Field)
	_, err = configsvc.NewRelayTuner(svc, &tunable{}, &recordingPins{}, ports.SystemClock, configsvc.RelayTunerConfig{Owner: "r", Every: time.Nanosecond})
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "Every", ce.Field)
}
