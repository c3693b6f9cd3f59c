package main

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/july/template/adapters/metrics"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sweep"
)

// startTaskRecovery runs the task-recovery sweep over every task table the
// domains registered (apps/internal/domains.All, through domain.BuildRelay).
func startTaskRecovery(lc fx.Lifecycle, cfg config, tables []ports.TaskTable, clock ports.Clock, m *metrics.SweepMetrics, log *slog.Logger) error {
	s, err := sweep.NewTaskRecovery(tables, clock, sweep.TaskRecoveryConfig{
		Every:             cfg.TaskRecoveryEvery,
		RecoveredFunc:     m.TaskRecovered,
		EnqueueFailedFunc: m.TaskDeliveryFailed,
		Logger:            log,
	})
	if err != nil {
		return err
	}
	lc.Append(fx.Hook{OnStart: s.Start, OnStop: s.Stop})
	return nil
}

// startIdempotencyRetention runs the idempotency retention over every
// table the domains registered (apps/internal/domains.All, through domain.BuildRelay).
func startIdempotencyRetention(lc fx.Lifecycle, cfg config, tables []ports.IdempotencyTable, clock ports.Clock, m *metrics.SweepMetrics, log *slog.Logger) error {
	j, err := sweep.NewIdempotencyRetention(tables, clock, sweep.IdempotencyRetentionConfig{
		Window:      cfg.IdemRetention,
		ExpiredFunc: m.IdempotencyExpired,
		Logger:      log,
	})
	if err != nil {
		return err
	}
	lc.Append(fx.Hook{OnStart: j.Start, OnStop: j.Stop})
	return nil
}
