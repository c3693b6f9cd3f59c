package queue

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/startstop"
)

// DurabilityWatch settings: one default and one range.
const (
	DefaultDurabilityWatchEvery = 5 * time.Minute
	MinDurabilityWatchEvery     = 10 * time.Second
	MaxDurabilityWatchEvery     = 24 * time.Hour
)

// durabilityCheckTimeout bounds one read of the queue Redis' settings.
const durabilityCheckTimeout = 10 * time.Second

// DurabilityWatchConfig tunes a DurabilityWatch.
type DurabilityWatchConfig struct {
	// Queue names the queue in the log lines. Required.
	Queue string
	// Every is the pause between checks. Default:
	// DefaultDurabilityWatchEvery; range
	// MinDurabilityWatchEvery..MaxDurabilityWatchEvery.
	Every time.Duration
	// Logger receives the watch's lines. Default: slog.Default().
	Logger *slog.Logger
}

// NewDurabilityWatch returns the watch of checker's Redis. It does not
// start it; stop it before the checker's client closes.
func NewDurabilityWatch(checker *DurabilityChecker, metrics *DurabilityMetrics, clock ports.Clock, cfg DurabilityWatchConfig) (*DurabilityWatch, error) {
	cfg.Every = cmp.Or(cfg.Every, DefaultDurabilityWatchEvery)
	if checker == nil || metrics == nil || cfg.Queue == "" {
		return nil, &startstop.ConfigError{Pkg: "asynq queue", Field: "NewDurabilityWatch", Want: "pass a checker, its metrics and the queue name"}
	}
	if err := startstop.CheckRange("asynq queue", "DurabilityWatchConfig", "Every", cfg.Every, MinDurabilityWatchEvery, MaxDurabilityWatchEvery); err != nil {
		return nil, err
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	w := &DurabilityWatch{checker: checker, metrics: metrics, log: cfg.Logger, queue: cfg.Queue}
	var err error
	w.Periodic, err = startstop.NewPeriodic(w.check, clock, startstop.PeriodicConfig{Name: "queue durability watch", Every: cfg.Every, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("asynq queue: NewDurabilityWatch: %w", err)
	}
	return w, nil
}

// DurabilityWatch reads the queue Redis' durability settings at Start and
// then every DurabilityWatchConfig.Every (DurabilityChecker), exports them
// (DurabilityMetrics), and logs one WARN each time the set of risks
// changes (never again while it stays the same). Redis can forget tasks it
// acknowledged (eviction, a restart without persistence, a failover);
// Postgres still holds every event, so this is an early signal to fix the
// Redis, not the guarantee. It remembers the last outcome so only changes
// are logged.
type DurabilityWatch struct {
	*startstop.Periodic

	checker *DurabilityChecker
	metrics *DurabilityMetrics
	log     *slog.Logger
	queue   string

	checked bool   // a check has succeeded
	risks   []Risk // of the last successful check
	failing bool   // the last check failed
}

// check reads the settings once and logs what changed. It returns no
// error: a failure is logged here, once per run of failures.
func (w *DurabilityWatch) check(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, durabilityCheckTimeout)
	d, err := w.checker.Check(cctx)
	cancel()
	if ctx.Err() != nil {
		return nil // stopping
	}
	defer w.metrics.Observe(d, err) // after the log line: a reader of the metrics finds it written
	if err != nil {
		if !w.failing {
			w.log.Warn("queue redis durability: cannot read its settings; retrying at the next check (asynq_queue_redis_durability_check_up is 0)",
				"queue", w.queue, "error", err.Error())
		}
		w.failing = true
		return nil // logged once above, not at every check
	}
	if w.failing {
		w.log.Info("queue redis durability: settings readable again", "queue", w.queue)
	}
	w.failing = false
	if w.checked && slices.Equal(w.risks, d.Risks) {
		return nil
	}
	first := !w.checked
	added, cleared := diffRisks(w.risks, d.Risks)
	w.checked, w.risks = true, d.Risks
	attrs := []any{"queue", w.queue, "risks", riskNames(d.Risks), "source", d.Source, "topology", d.Topology, "role", d.Role,
		"maxmemory", d.MaxMemory, "maxmemory_policy", d.MaxMemoryPolicy, "appendonly", d.AppendOnly}
	if d.AppendFsync != "" {
		attrs = append(attrs, "appendfsync", d.AppendFsync)
	}
	if !slices.Contains(d.Unknown, "save") {
		attrs = append(attrs, "save", d.Save)
	}
	if len(d.Unknown) > 0 {
		attrs = append(attrs, "unknown", d.Unknown)
	}
	if d.ConfigError != "" {
		attrs = append(attrs, "config_error", d.ConfigError)
	}
	switch {
	case len(d.Risks) > 0:
		if !first {
			attrs = append(attrs, "added", riskNames(added), "cleared", riskNames(cleared))
		}
		fixes := make([]string, len(d.Risks))
		for i, r := range d.Risks {
			fixes[i] = fmt.Sprintf("%s: set %s", r, r.Fix())
		}
		w.log.Warn("queue redis can lose acknowledged tasks: "+strings.Join(fixes, "; ")+
			" (Postgres keeps every event; docs/operations.md)", attrs...)
	case first:
		w.log.Info("queue redis durability: no risk found", attrs...)
	default:
		attrs = append(attrs, "cleared", riskNames(cleared))
		w.log.Info("queue redis durability: every risk cleared", attrs...)
	}
	return nil
}

// diffRisks returns the risks in next but not prev, and in prev but not next.
func diffRisks(prev, next []Risk) (added, cleared []Risk) {
	for _, r := range next {
		if !slices.Contains(prev, r) {
			added = append(added, r)
		}
	}
	for _, r := range prev {
		if !slices.Contains(next, r) {
			cleared = append(cleared, r)
		}
	}
	return added, cleared
}

func riskNames(rs []Risk) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}
