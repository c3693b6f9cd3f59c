package main

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/core/ports"
)

// DefaultQueueDurabilityEvery is RELAY_QUEUE_DURABILITY_CHECK's default.
const DefaultQueueDurabilityEvery = queue.DefaultDurabilityWatchEvery

// durabilityOption runs a queue.DurabilityWatch: it reads the queue Redis'
// durability settings at start and every RELAY_QUEUE_DURABILITY_CHECK,
// exports asynq_queue_redis_durability_risk{risk} and _check_up, and logs
// one WARN each time the set of risks changes.
var durabilityOption = fx.Invoke(startDurabilityCheck)

func startDurabilityCheck(lc fx.Lifecycle, cfg config, checker *queue.DurabilityChecker, reg prometheus.Registerer, clock ports.Clock, log *slog.Logger) error {
	m, err := queue.NewDurabilityMetrics(reg)
	if err != nil {
		return err
	}
	w, err := queue.NewDurabilityWatch(checker, m, clock, queue.DurabilityWatchConfig{
		Queue: cfg.Queue, Every: cfg.QueueDurabilityEvery, Logger: log.With("component", "queue-durability")})
	if err != nil {
		return err
	}
	lc.Append(fx.Hook{OnStart: w.Start, OnStop: w.Stop}) // stops before the checker's client closes (queue.Module)
	return nil
}
