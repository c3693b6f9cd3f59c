package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/core/startstop"
)

// DefaultQueueDurabilityEvery is RELAY_QUEUE_DURABILITY_CHECK's default.
const DefaultQueueDurabilityEvery = 5 * time.Minute

// durabilityCheckTimeout bounds one read of the queue Redis' settings.
const durabilityCheckTimeout = 10 * time.Second

// durabilityOption reads the queue Redis' durability settings at start
// and every RELAY_QUEUE_DURABILITY_CHECK (queue.CheckDurability), exports
// asynq_queue_redis_durability_risk{risk} and _check_up, and logs one WARN
// each time the set of risks changes (never again while it stays the
// same). Redis can forget tasks it acknowledged (eviction, a restart
// without persistence, a failover); Postgres still holds every event, so
// this is an early signal to fix the Redis, not the guarantee.
var durabilityOption = fx.Invoke(startDurabilityCheck)

func startDurabilityCheck(lc fx.Lifecycle, cfg config, checker *queue.DurabilityChecker, reg prometheus.Registerer, log *slog.Logger) error {
	m, err := queue.NewDurabilityMetrics(reg)
	if err != nil {
		return err
	}
	w := &durabilityWatch{checker: checker, metrics: m, log: log.With("component", "queue-durability"), queue: cfg.Queue}
	var loop startstop.Service
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			loop.Start(func(ctx context.Context) {
				t := time.NewTicker(cmp.Or(cfg.QueueDurabilityEvery, DefaultQueueDurabilityEvery))
				defer t.Stop()
				for {
					w.check(ctx)
					select {
					case <-ctx.Done():
						return
					case <-t.C:
					}
				}
			})
			return nil
		},
		OnStop: loop.Stop, // before the checker's client closes (queue.Module)
	})
	return nil
}

// durabilityWatch remembers the last outcome so only changes are logged.
type durabilityWatch struct {
	checker *queue.DurabilityChecker
	metrics *queue.DurabilityMetrics
	log     *slog.Logger
	queue   string

	checked bool         // a check has succeeded
	risks   []queue.Risk // of the last successful check
	failing bool         // the last check failed
}

func (w *durabilityWatch) check(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, durabilityCheckTimeout)
	d, err := w.checker.Check(cctx)
	cancel()
	if ctx.Err() != nil {
		return // stopping
	}
	defer w.metrics.Observe(d, err) // after the log line: a reader of the metrics finds it written
	if err != nil {
		if !w.failing {
			w.log.Warn("queue redis durability: cannot read its settings; retrying at the next check (asynq_queue_redis_durability_check_up is 0)",
				"queue", w.queue, "error", err.Error())
		}
		w.failing = true
		return
	}
	if w.failing {
		w.log.Info("queue redis durability: settings readable again", "queue", w.queue)
	}
	w.failing = false
	if w.checked && slices.Equal(w.risks, d.Risks) {
		return
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
}

// diffRisks returns the risks in next but not prev, and in prev but not next.
func diffRisks(prev, next []queue.Risk) (added, cleared []queue.Risk) {
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

func riskNames(rs []queue.Risk) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}
