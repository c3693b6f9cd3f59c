package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/july/template/core/startstop"
)

// OutboxChannel is the NOTIFY channel the tb_outbox_event insert trigger
// signals once per inserting statement.
const OutboxChannel = "outbox_event"

// Listener defaults.
const (
	// DefaultProbeTimeout is how long a Listener waits for its own probe
	// NOTIFY before it calls its connection deaf.
	DefaultProbeTimeout = 3 * time.Second
	// DefaultFallbackPoll is how often a Listener whose connection is deaf
	// calls its NotifyFunc instead of the notifications (the relay then
	// polls at this cadence, not at RELAY_POLL_INTERVAL).
	DefaultFallbackPoll = 50 * time.Millisecond
	// ReprobeEvery is how often a deaf Listener sends its probe again.
	ReprobeEvery = 30 * time.Second
)

// ListenerConfig configures NewListenerWith.
type ListenerConfig struct {
	// URL is a direct connection to Postgres (DATABASE_DIRECT_URL): LISTEN
	// needs a session of its own, which a pooler in transaction mode does
	// not give (the LISTEN runs on whichever server connection it lends,
	// and the notifications never come back).
	URL string
	// Channel is the channel to LISTEN on.
	Channel string
	// Notify is called for every notification, once after every LISTEN
	// (to catch up), and every FallbackPoll while the connection is deaf.
	Notify func()
	// Log receives the Listener's warnings (default slog.Default()).
	Log *slog.Logger
	// Probe, when set, sends one NOTIFY on Channel with payload from
	// another session (the pool the writers use, which may be a pooler).
	// After every LISTEN the Listener sends one and waits ProbeTimeout
	// for it: when it does not arrive the connection is deaf (it goes
	// through a pooler in transaction mode): one WARN naming
	// DATABASE_DIRECT_URL (per process, until a probe comes back),
	// Working() false, Notify every FallbackPoll, and the probe again
	// every ReprobeEvery until it comes back.
	Probe func(ctx context.Context, payload string) error
	// ProbeTimeout: default DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// FallbackPoll: default DefaultFallbackPoll.
	FallbackPoll time.Duration
}

// Listener holds one dedicated connection that LISTENs on a channel and
// calls NotifyFunc for every notification. When the connection drops it
// reconnects with backoff; the relay's polling covers the gap, so a lost
// listener only costs latency, never events. With a Probe it checks, after
// every LISTEN, that notifications really arrive (see ListenerConfig).
type Listener struct {
	cfg ListenerConfig

	svc   startstop.Service
	ready chan struct{}
	once  sync.Once

	// state is listenDown, listenWorking or listenDeaf.
	state atomic.Int32
	// deafWarned: the WARN for a deaf connection was logged, and no probe
	// has succeeded since.
	deafWarned atomic.Bool
}

// Listener states.
const (
	listenDown    int32 = iota // not connected (or not yet probed)
	listenWorking              // connected; the last probe came back (or no probe)
	listenDeaf                 // connected; the last probe did not come back
)

// NewListener returns a Listener for channel on the database at url,
// without a probe.
func NewListener(url, channel string, notifyFunc func(), log *slog.Logger) *Listener {
	return NewListenerWith(ListenerConfig{URL: url, Channel: channel, Notify: notifyFunc, Log: log})
}

// NewListenerWith returns a Listener for cfg.
func NewListenerWith(cfg ListenerConfig) *Listener {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = DefaultProbeTimeout
	}
	if cfg.FallbackPoll <= 0 {
		cfg.FallbackPoll = DefaultFallbackPoll
	}
	return &Listener{cfg: cfg, ready: make(chan struct{})}
}

// Start connects in the background and returns immediately.
func (l *Listener) Start(context.Context) error {
	l.svc.Start(func(ctx context.Context) {
		var wg sync.WaitGroup
		wg.Go(func() { l.fallbackPoll(ctx) })
		l.run(ctx)
		wg.Wait()
	})
	return nil
}

// Ready is closed once the first LISTEN succeeded (for tests and readiness).
func (l *Listener) Ready() <-chan struct{} { return l.ready }

// Working reports whether notifications arrive: connected, and the last
// probe (if any) came back. It backs the outbox_listen_working gauge.
func (l *Listener) Working() bool { return l.state.Load() == listenWorking }

// Stop closes the connection and waits for the goroutine. Safe to repeat.
func (l *Listener) Stop(ctx context.Context) error { return l.svc.Stop(ctx) }

func (l *Listener) run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.listen(ctx, func() { l.once.Do(func() { close(l.ready) }) })
		l.state.Store(listenDown)
		if ctx.Err() != nil {
			return
		}
		l.cfg.Log.Warn("postgres LISTEN connection lost; relay falls back to polling until it reconnects",
			"channel", l.cfg.Channel, "retry_in", backoff.String(), "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

func (l *Listener) listen(ctx context.Context, onReady func()) error {
	conn, err := pgx.Connect(ctx, l.cfg.URL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.cfg.Channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen %s: %w", l.cfg.Channel, err)
	}
	onReady()
	token := ""
	if l.cfg.Probe == nil {
		l.state.Store(listenWorking)
	} else {
		token = "probe-" + randomHex()
		pctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go l.probe(pctx, token)
	}
	l.cfg.Notify() // catch up on anything inserted while we were away
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		if token != "" && n.Payload == token {
			l.heard()
		}
		l.cfg.Notify()
	}
}

// probe sends the probe NOTIFY and, when it has not come back within
// ProbeTimeout, calls the connection deaf; then it sends it again every
// ReprobeEvery until it comes back (heard), which ends the fast polling
// (a probe lost on the way, not a deaf connection).
func (l *Listener) probe(ctx context.Context, token string) {
	for first := true; ; first = false {
		sctx, cancel := context.WithTimeout(ctx, l.cfg.ProbeTimeout)
		start := time.Now()
		err := l.cfg.Probe(sctx, token)
		cancel()
		if err != nil && ctx.Err() == nil && first {
			// Not a verdict on the LISTEN connection: the writers' pool
			// failed too.
			l.cfg.Log.Warn("postgres LISTEN probe: could not send the probe NOTIFY; polling every "+l.cfg.FallbackPoll.String()+" until a notification arrives",
				"channel", l.cfg.Channel, "error", err)
		}
		if !sleep(ctx, l.cfg.ProbeTimeout-time.Since(start)) || l.state.Load() == listenWorking {
			return
		}
		if first && l.state.CompareAndSwap(listenDown, listenDeaf) && err == nil && !l.deafWarned.Swap(true) {
			l.cfg.Log.Warn("postgres LISTEN receives no notifications: its own probe NOTIFY did not arrive within "+l.cfg.ProbeTimeout.String()+
				"; DATABASE_DIRECT_URL (default DATABASE_URL) probably goes through a connection pooler in transaction mode. "+
				"Set DATABASE_DIRECT_URL to a direct connection to Postgres (not the pooler). Until then the relay polls every "+
				l.cfg.FallbackPoll.String()+" instead of waking on commits",
				"channel", l.cfg.Channel, "probe_timeout", l.cfg.ProbeTimeout.String(), "fallback_poll", l.cfg.FallbackPoll.String())
		}
		if !sleep(ctx, ReprobeEvery) {
			return
		}
	}
}

// sleep waits d and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// heard records that the probe came back.
func (l *Listener) heard() {
	prev := l.state.Swap(listenWorking)
	if prev == listenDeaf && l.deafWarned.Swap(false) {
		l.cfg.Log.Info("postgres LISTEN receives notifications again; the relay wakes on commits", "channel", l.cfg.Channel)
	}
}

// fallbackPoll calls Notify every FallbackPoll while the connection is
// deaf.
func (l *Listener) fallbackPoll(ctx context.Context) {
	if l.cfg.Probe == nil {
		return
	}
	t := time.NewTicker(l.cfg.FallbackPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if l.state.Load() == listenDeaf {
				l.cfg.Notify()
			}
		}
	}
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
