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
	// DefaultIdempotencyRetentionEvery; 1s..24h.
	Every time.Duration
	// Batch caps one ExpireRecords call; a pass repeats it until a call
	// clears fewer. Default: DefaultIdempotencyRetentionBatch; 1..10000.
	Batch int
	// ExpiredFunc is told, per table and batch, how many records were
	// cleared (a metric). Default: nothing.
	ExpiredFunc func(table string, n int)
}

// IdempotencyRetention is the idempotency-record retention job (see the
// package doc).
type IdempotencyRetention struct {
	tables []ports.IdempotencyTable
	clock  ports.Clock
	cfg    IdempotencyRetentionConfig
	log    *slog.Logger
	svc    startstop.Service
}

// NewIdempotencyRetention returns the job over tables. It does not start
// it. Every table needs a unique non-empty Name and Records.
func NewIdempotencyRetention(tables []ports.IdempotencyTable, clock ports.Clock, cfg IdempotencyRetentionConfig, log *slog.Logger) (*IdempotencyRetention, error) {
	cfg.Window = cmp.Or(cfg.Window, DefaultIdempotencyRetention)
	cfg.Every = cmp.Or(cfg.Every, DefaultIdempotencyRetentionEvery)
	cfg.Batch = cmp.Or(cfg.Batch, DefaultIdempotencyRetentionBatch)
	switch {
	case clock == nil:
		return nil, errors.New("sweep: NewIdempotencyRetention needs a clock")
	case cfg.Window < MinIdempotencyRetention || cfg.Window > MaxIdempotencyRetention:
		return nil, fmt.Errorf("sweep: IdempotencyRetentionConfig.Window %s outside %s..%s; keep records at least as long as callers retry",
			cfg.Window, MinIdempotencyRetention, MaxIdempotencyRetention)
	case cfg.Every < time.Second || cfg.Every > 24*time.Hour:
		return nil, fmt.Errorf("sweep: IdempotencyRetentionConfig.Every %s outside 1s..24h", cfg.Every)
	case cfg.Batch < 1 || cfg.Batch > 10_000:
		return nil, fmt.Errorf("sweep: IdempotencyRetentionConfig.Batch %d outside 1..10000", cfg.Batch)
	}
	seen := map[string]bool{}
	for i, it := range tables {
		if err := checkName(it.Name, seen); err != nil {
			return nil, fmt.Errorf("sweep: idempotency table %d: %w", i, err)
		}
		if it.Records == nil {
			return nil, fmt.Errorf("sweep: idempotency table %q needs Records", it.Name)
		}
	}
	if cfg.ExpiredFunc == nil {
		cfg.ExpiredFunc = func(string, int) {}
	}
	if log == nil {
		log = slog.Default()
	}
	return &IdempotencyRetention{tables: tables, clock: clock, cfg: cfg, log: log}, nil
}

// Window returns the configured retention window.
func (j *IdempotencyRetention) Window() time.Duration { return j.cfg.Window }

// Start runs a pass now and then every Config.Every in the background, and
// returns at once. Stop ends it; both follow startstop's contract.
func (j *IdempotencyRetention) Start(context.Context) error {
	j.svc.Start(func(ctx context.Context) { repeat(ctx, j.clock, j.cfg.Every, j.pass) })
	return nil
}

// Stop ends the job and waits for the pass in flight or for ctx.
func (j *IdempotencyRetention) Stop(ctx context.Context) error {
	if err := j.svc.Stop(ctx); err != nil {
		return fmt.Errorf("idempotency retention: %w", err)
	}
	return nil
}

func (j *IdempotencyRetention) pass(ctx context.Context) {
	if _, err := j.RunOnce(ctx); err != nil && ctx.Err() == nil {
		j.log.Error("idempotency retention failed; will retry", "err", err)
	}
}

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
