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

// Retention settings: one default and one range each.
const (
	// MinRetentionWindow keeps delivered events long enough to
	// investigate; RetentionConfig.Window has no default (off unless set).
	MinRetentionWindow = time.Hour
	MaxRetentionWindow = 10 * 365 * 24 * time.Hour

	DefaultRetentionEvery = 10 * time.Minute
	MinRetentionEvery     = time.Second
	MaxRetentionEvery     = 24 * time.Hour

	DefaultRetentionBatch = 1000
	MinRetentionBatch     = 1
	MaxRetentionBatch     = 100_000
)

// RetentionConfig tunes a Retention.
type RetentionConfig struct {
	// Window is how long a delivered event is kept. Required; range
	// MinRetentionWindow..MaxRetentionWindow.
	Window time.Duration
	// Every is the pause between passes. Default: DefaultRetentionEvery;
	// range MinRetentionEvery..MaxRetentionEvery.
	Every time.Duration
	// Batch is the largest single delete. Default: DefaultRetentionBatch;
	// range MinRetentionBatch..MaxRetentionBatch.
	Batch int
	// RemovedFunc is told how many rows each batch removed (a metric).
	// Default: nothing.
	RemovedFunc func(n int)
	// Logger receives the job's log lines. Default: slog.Default().
	Logger *slog.Logger
}

// Retention deletes delivered events older than a window, in small batches,
// so the table does not grow without bound. It never touches Pending,
// Delivering or Failed rows (the store's PurgeDelivered guarantees it). It is
// off unless the app configures a window.
type Retention struct {
	// Periodic gives the job Start (a pass now, then every Config.Every)
	// and Stop.
	*startstop.Periodic

	store ports.OutboxOperatorStore
	clock ports.Clock
	cfg   RetentionConfig
}

// NewRetention returns the job over store. It does not start it. A refused
// setting is a *startstop.ConfigError.
func NewRetention(store ports.OutboxOperatorStore, clock ports.Clock, cfg RetentionConfig) (*Retention, error) {
	cfg.Every = cmp.Or(cfg.Every, DefaultRetentionEvery)
	cfg.Batch = cmp.Or(cfg.Batch, DefaultRetentionBatch)
	if err := cmp.Or(
		startstop.CheckRange("relay", "RetentionConfig", "Window", cfg.Window, MinRetentionWindow, MaxRetentionWindow),
		startstop.CheckRange("relay", "RetentionConfig", "Every", cfg.Every, MinRetentionEvery, MaxRetentionEvery),
		startstop.CheckRange("relay", "RetentionConfig", "Batch", cfg.Batch, MinRetentionBatch, MaxRetentionBatch),
	); err != nil {
		return nil, err
	}
	if cfg.RemovedFunc == nil {
		cfg.RemovedFunc = func(int) {}
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	r := &Retention{store: store, clock: clock, cfg: cfg}
	var err error
	r.Periodic, err = startstop.NewPeriodic(r.pass, clock, startstop.PeriodicConfig{Name: "outbox retention", Every: cfg.Every, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("relay: NewRetention: %w", err)
	}
	return r, nil
}

// RunOnce deletes batches until fewer than a full batch remain or ctx ends,
// and returns how many rows it removed.
func (r *Retention) RunOnce(ctx context.Context) (int, error) {
	cutoff := r.clock.Now().Add(-r.cfg.Window)
	total := 0
	for ctx.Err() == nil {
		n, err := r.store.PurgeDelivered(ctx, cutoff, r.cfg.Batch)
		if err != nil {
			return total, fmt.Errorf("purge delivered outbox events before %s: %w", cutoff.Format(time.RFC3339), err)
		}
		total += n
		r.cfg.RemovedFunc(n)
		if n < r.cfg.Batch {
			break
		}
	}
	return total, nil
}

func (r *Retention) pass(ctx context.Context) error {
	n, err := r.RunOnce(ctx)
	if err == nil && n > 0 {
		r.cfg.Logger.Info("outbox retention removed delivered events", "count", n, "window", r.cfg.Window.String())
	}
	return err
}
