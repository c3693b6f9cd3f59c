package relay

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/startstop"
)

// Retention deletes delivered events older than a window, in small batches,
// so the table does not grow without bound. It never touches Pending,
// Delivering or Failed rows (the store's PurgeDelivered guarantees it). It is
// off unless the app configures a window.
type Retention struct {
	store  ports.OutboxOperatorStore
	clock  ports.Clock
	window time.Duration
	batch  int
	log    *slog.Logger
	// RemovedFunc is told how many rows each batch removed (for a metric).
	RemovedFunc func(n int)
	// Every is the pause between runs once started. Default:
	// DefaultRetentionEvery.
	Every time.Duration

	svc startstop.Service
}

// DefaultRetentionEvery is the default Retention.Every.
const DefaultRetentionEvery = 10 * time.Minute

// Start runs the job now and then every r.Every in the background, and
// returns at once. Stop ends it; both follow startstop's contract.
func (r *Retention) Start(context.Context) error {
	r.svc.Start(func(ctx context.Context) { r.Run(ctx, cmp.Or(r.Every, DefaultRetentionEvery)) })
	return nil
}

// Stop ends the background job and waits for it or for ctx.
func (r *Retention) Stop(ctx context.Context) error {
	if err := r.svc.Stop(ctx); err != nil {
		return fmt.Errorf("outbox retention: %w", err)
	}
	return nil
}

// NewRetention returns a job keeping delivered events for window. batch is
// the largest single DELETE (default 1000).
func NewRetention(store ports.OutboxOperatorStore, clock ports.Clock, window time.Duration, batch int, log *slog.Logger) (*Retention, error) {
	if window < time.Hour {
		return nil, fmt.Errorf("relay: retention window %s below 1h; keep delivered events long enough to investigate", window)
	}
	if batch <= 0 {
		batch = 1000
	}
	if log == nil {
		log = slog.Default()
	}
	return &Retention{store: store, clock: clock, window: window, batch: batch, log: log, RemovedFunc: func(int) {}}, nil
}

// RunOnce deletes batches until fewer than a full batch remain or ctx ends,
// and returns how many rows it removed.
func (r *Retention) RunOnce(ctx context.Context) (int, error) {
	cutoff := r.clock.Now().Add(-r.window)
	total := 0
	for ctx.Err() == nil {
		n, err := r.store.PurgeDelivered(ctx, cutoff, r.batch)
		if err != nil {
			return total, fmt.Errorf("purge delivered outbox events before %s: %w", cutoff.Format(time.RFC3339), err)
		}
		total += n
		r.RemovedFunc(n)
		if n < r.batch {
			break
		}
	}
	return total, nil
}

// Run calls RunOnce every period until ctx ends.
func (r *Retention) Run(ctx context.Context, every time.Duration) {
	for {
		if n, err := r.RunOnce(ctx); err != nil && ctx.Err() == nil {
			r.log.Error("outbox retention failed; will retry", "err", err)
		} else if n > 0 {
			r.log.Info("outbox retention removed delivered events", "count", n, "window", r.window.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-r.clock.After(every):
		}
	}
}
