package sweep

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/startstop"
)

// IdempotencyRetention settings: one default and one range each.
const (
	// DefaultIdempotencyRetention keeps records 7 days, the upper end of
	// the standards' TTL rule (24h..7d: the window a caller may retry in).
	DefaultIdempotencyRetention = 7 * 24 * time.Hour
	MinIdempotencyRetention     = 24 * time.Hour
	MaxIdempotencyRetention     = 365 * 24 * time.Hour

	DefaultIdempotencyRetentionEvery = 10 * time.Minute
	MinIdempotencyRetentionEvery     = time.Second
	MaxIdempotencyRetentionEvery     = 24 * time.Hour
	DefaultIdempotencyRetentionBatch = 1000
)

// IdempotencyRetentionConfig tunes an IdempotencyRetention. The zero value
// is valid.
type IdempotencyRetentionConfig struct {
	// Window is how long a record is kept after it was saved. Default:
	// DefaultIdempotencyRetention; range
	// MinIdempotencyRetention..MaxIdempotencyRetention.
	Window time.Duration
	// Every is the pause between passes. Default:
	// DefaultIdempotencyRetentionEvery; range
	// MinIdempotencyRetentionEvery..MaxIdempotencyRetentionEvery.
	Every time.Duration
	// Batch caps one ExpireRecords call; a pass repeats it until a call
	// clears fewer. Default: DefaultIdempotencyRetentionBatch; 1..10000.
	Batch int
	// ExpiredFunc is told, per table and batch, how many records were
	// cleared (a metric). Default: nothing.
	ExpiredFunc func(table string, n int)
	// Logger receives the job's log lines. Default: slog.Default().
	Logger *slog.Logger
}

// IdempotencyRetention is the idempotency-record retention job (see the
// package doc).
type IdempotencyRetention struct {
	// Periodic gives the job Start (a pass now, then every Config.Every)
	// and Stop.
	*startstop.Periodic

	tables []ports.IdempotencyTable
	clock  ports.Clock
	cfg    IdempotencyRetentionConfig
	log    *slog.Logger
}

// NewIdempotencyRetention returns the job over tables. It does not start
// it. Every table needs a unique non-empty Name and Records. A refused
// setting is a *startstop.ConfigError.
func NewIdempotencyRetention(tables []ports.IdempotencyTable, clock ports.Clock, cfg IdempotencyRetentionConfig) (*IdempotencyRetention, error) {
	cfg.Window = cmp.Or(cfg.Window, DefaultIdempotencyRetention)
	cfg.Every = cmp.Or(cfg.Every, DefaultIdempotencyRetentionEvery)
	cfg.Batch = cmp.Or(cfg.Batch, DefaultIdempotencyRetentionBatch)
	if err := cmp.Or(
		startstop.CheckRange("sweep", "IdempotencyRetentionConfig", "Window", cfg.Window, MinIdempotencyRetention, MaxIdempotencyRetention),
		startstop.CheckRange("sweep", "IdempotencyRetentionConfig", "Every", cfg.Every, MinIdempotencyRetentionEvery, MaxIdempotencyRetentionEvery),
		startstop.CheckRange("sweep", "IdempotencyRetentionConfig", "Batch", cfg.Batch, 1, 10_000),
	); err != nil {
		var ce *startstop.ConfigError
		if errors.As(err, &ce) && ce.Field == "Window" {
			ce.Want += "; keep records at least as long as callers retry"
		}
		return nil, err
	}
	seen := map[string]bool{}
	for i, it := range tables {
		if err := checkName(fmt.Sprintf("idempotency table %d", i), it.Name, seen); err != nil {
			return nil, err
		}
		if it.Records == nil {
			return nil, &startstop.ConfigError{Pkg: "sweep", Field: fmt.Sprintf("idempotency table %q", it.Name),
				Want: "register it with Records"}
		}
	}
	if cfg.ExpiredFunc == nil {
		cfg.ExpiredFunc = func(string, int) {}
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	j := &IdempotencyRetention{tables: tables, clock: clock, cfg: cfg, log: cfg.Logger}
	var err error
	j.Periodic, err = startstop.NewPeriodic(func(ctx context.Context) error {
		_, err := j.RunOnce(ctx)
		return err
	}, clock, startstop.PeriodicConfig{Name: "idempotency retention", Every: cfg.Every, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("sweep: NewIdempotencyRetention: %w", err)
	}
	return j, nil
}

// Window returns the configured retention window.
func (j *IdempotencyRetention) Window() time.Duration { return j.cfg.Window }

// RunOnce clears, on every registered table, the records saved at or
// before now minus the window, in batches, and returns how many it
// cleared with the tables' errors joined (one table's failure does not
// stop the others).
func (j *IdempotencyRetention) RunOnce(ctx context.Context) (int, error) {
	cutoff := j.clock.Now().Add(-j.cfg.Window)
	total := 0
	var errs []error
	for _, it := range j.tables {
		n := 0
		for ctx.Err() == nil {
			cleared, err := it.Records.ExpireRecords(ctx, cutoff, j.cfg.Batch)
			if err != nil {
				errs = append(errs, fmt.Errorf("idempotency table %s: expire records saved before %s: %w", it.Name, cutoff.Format(time.RFC3339), err))
				break
			}
			n += cleared
			j.cfg.ExpiredFunc(it.Name, cleared)
			if cleared < j.cfg.Batch {
				break
			}
		}
		if n > 0 {
			j.log.Info("idempotency records expired", "idempotency_table", it.Name, "count", n, "window", j.cfg.Window.String())
		}
		total += n
	}
	return total, errors.Join(errs...)
}
