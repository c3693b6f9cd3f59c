package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/startstop"
)

// Relay runs the claim loops and the recovery sweep.
type Relay struct {
	store ports.OutboxRelayStore
	pub   ports.Publisher
	clock ports.Clock
	cfg   Config // BatchSize, LeaseFor and Policy.MaxAttempts change under tuneMu (Retune)
	opts  Options

	tuneMu sync.RWMutex

	wake   []chan struct{}
	svc    startstop.Service
	outage outageLog
}

// Options are the optional collaborators of a Relay.
type Options struct {
	// Logger receives one line per problem; default: slog.Default().
	Logger *slog.Logger
	// Observer receives batch results for metrics; default: none.
	Observer Observer
	// RandFunc returns a number in [0, 1) for backoff jitter; default: a
	// fixed 0.5 (no jitter), so production wiring must pass math/rand.
	RandFunc func() float64
	// RedactFunc cleans an error message before it is stored in
	// last_error_message; default: outbox.SafeMessage.
	RedactFunc func(string) string
	// Tracer wraps each claimed batch in a span; default: none.
	Tracer BatchTracer
}

// New returns a Relay. It does not start it.
func New(store ports.OutboxRelayStore, pub ports.Publisher, clock ports.Clock, cfg Config, opts Options) (*Relay, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if store == nil || pub == nil || clock == nil {
		return nil, errors.New("relay: store, publisher and clock are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	if opts.RandFunc == nil {
		opts.RandFunc = func() float64 { return 0.5 }
	}
	if opts.RedactFunc == nil {
		opts.RedactFunc = outbox.SafeMessage
	}
	r := &Relay{store: store, pub: pub, clock: clock, cfg: cfg, opts: opts, outage: outageLog{every: cfg.OutageLogEvery}}
	for range cfg.Loops {
		r.wake = append(r.wake, make(chan struct{}, 1))
	}
	return r, nil
}

// Notify wakes every idle loop at once, e.g. on a Postgres NOTIFY after an
// insert. It never blocks; notifications arriving while a loop is busy
// coalesce into one extra pass.
func (r *Relay) Notify() {
	for _, c := range r.wake {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// Start launches the loops and the sweep and returns immediately. Calling it
// on a running relay does nothing.
func (r *Relay) Start(context.Context) error {
	r.svc.Start(func(ctx context.Context) {
		// fin outlives Stop by StopTimeout: the batches in flight finish
		// within that one budget, however many there are.
		fin, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		defer context.AfterFunc(ctx, func() { time.AfterFunc(r.cfg.StopTimeout, cancel) })()
		var wg sync.WaitGroup
		for i := range r.cfg.Loops {
			wg.Go(func() { r.loop(ctx, fin, i) })
		}
		wg.Go(func() { r.sweep(ctx) })
		wg.Wait()
	})
	return nil
}

// Stop ends the loops after their in-flight batches are published and
// marked (all of them within one Config.StopTimeout from Stop) and waits for them or for ctx. It is safe
// before Start and more than once.
func (r *Relay) Stop(ctx context.Context) error {
	if err := r.svc.Stop(ctx); err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	return nil
}

// Owner returns the lease owner used by loop i.
func (r *Relay) Owner(i int) string { return r.cfg.Owner + "/" + strconv.Itoa(i) }

// loop drains due rows batch after batch. While a full batch is being
// published it already claims the next one, so the database round trips of
// one batch overlap the queue round trips of the other; when a batch comes
// back short the loop sleeps until a notification or the poll interval.
// fin is the detached context claims and finishes run in (see Start).
func (r *Relay) loop(ctx, fin context.Context, i int) {
	owner := r.Owner(i)
	type claimed struct {
		batch ClaimedBatch
		err   error
	}
	var next chan claimed
	for {
		start := r.clock.Now()
		var b ClaimedBatch
		var err error
		if next != nil {
			c := <-next
			b, err, next = c.batch, c.err, nil
		} else if ctx.Err() == nil {
			b, err = r.claim(fin, owner)
		}
		if len(b.Events) == r.tuned().BatchSize && ctx.Err() == nil {
			ch := make(chan claimed, 1)
			next = ch
			go func() {
				nb, err := r.claim(fin, owner)
				ch <- claimed{nb, err}
			}()
		}
		if len(b.Events) > 0 {
			if ferr := r.finish(fin, b); ferr != nil {
				err = ferr
			}
		}
		if err != nil && ctx.Err() == nil {
			r.opts.Logger.Error("outbox relay batch failed; will retry", "owner", owner, "error", err)
		}
		if next != nil {
			continue // the prefetched batch is finished on the next pass, even when stopping
		}
		if ctx.Err() != nil {
			return
		}
		// A full batch always prefetched above, so this pass came back short.
		// Poll on a fixed cadence: the time spent on this pass counts
		// against the interval, so an event waits at most one interval.
		select {
		case <-ctx.Done():
			return
		case <-r.wake[i]:
		case <-r.clock.After(max(r.cfg.PollInterval-r.clock.Now().Sub(start), 0)):
		}
	}
}

func (r *Relay) sweep(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.clock.After(r.cfg.RecoverEvery):
		}
		// The requeued rows come due after the policy's backoff; the claim
		// loops' poll picks them up, so there is nobody to wake now.
		if _, err := r.RecoverOnce(ctx); err != nil && ctx.Err() == nil {
			r.opts.Logger.Error("outbox lease recovery failed; will retry", "error", err)
		}
		if _, err := r.ParkOnce(ctx); err != nil && ctx.Err() == nil {
			r.opts.Logger.Error("parking blocked ordered outbox events failed; will retry", "error", err)
		}
	}
}

// ParkFor is how long ParkOnce keeps a blocked ordered event out of the
// claim's way. Its predecessor's consumption record brings it back at
// once; ParkFor bounds the wait when that record came another way.
const ParkFor = 30 * time.Second

// ParkOnce parks (up to 10 batches of) due ordered events that wait for
// their predecessor (ports.OutboxRelayStore.ParkBlocked), so the claims
// stop reading past them: a stuck aggregate's waiting events would
// otherwise cost every claim of every relay.
func (r *Relay) ParkOnce(ctx context.Context) (int, error) {
	now := r.clock.Now()
	n, err := r.store.ParkBlocked(ctx, now, now.Add(ParkFor), 10*r.tuned().BatchSize)
	if err != nil {
		return 0, fmt.Errorf("park blocked ordered outbox events: %w", err)
	}
	return n, nil
}

// RecoverOnce takes back expired leases (up to 10 batches' worth). Each
// counts as a failed attempt under the current policy (its MaxAttempts
// follows Retune): the row goes back to Pending after the backoff, or, when
// that was its last attempt, fails for good with outbox.CodeLeaseExpired,
// so an event that kills every relay holding it ends Failed and alerts
// instead of being claimed forever.
func (r *Relay) RecoverOnce(ctx context.Context) (ports.RecoverResult, error) {
	cfg := r.tuned()
	res, err := r.store.RecoverExpired(ctx, ports.RecoverParams{Now: r.clock.Now(), Limit: 10 * cfg.BatchSize, Policy: cfg.Policy})
	if err != nil {
		return ports.RecoverResult{}, fmt.Errorf("recover expired outbox leases: %w", err)
	}
	if res.Recovered() == 0 {
		return res, nil
	}
	rec := RecoveryResult{Requeued: res.Requeued}
	for _, f := range res.Failed {
		rec.FailedEvents = append(rec.FailedEvents, FailedEvent{EventID: f.EventID, EventType: f.EventType, Code: outbox.CodeLeaseExpired, Attempts: f.RetryCount})
		r.opts.Logger.Error("outbox event failed for good: every relay that held it stopped before finishing; find what kills the relay (OOM, crash) for this event, then replay it",
			"event_id", f.EventID, "event_type", f.EventType, "error_code", outbox.CodeLeaseExpired, "attempts", f.RetryCount)
	}
	r.opts.Observer.Recovered(rec)
	if res.Requeued > 0 {
		r.opts.Logger.Warn("outbox leases expired and were recovered; a relay probably died", "count", res.Requeued)
	}
	return res, nil
}
