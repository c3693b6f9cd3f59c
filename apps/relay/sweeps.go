package main

import (
	"log/slog"

	"github.com/uptrace/bun"
	"go.uber.org/fx"

	"github.com/july/template/adapters/metrics"
	"github.com/july/template/adapters/postgres/pgperiodic"
	"github.com/july/template/apps/domain"
	"github.com/july/template/core/periodic"
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

// startPeriodic runs the periodic-command runner when a domain declares
// commands (domain.Domain.Commands) and PERIODIC_ENABLED is not false; a
// service without any starts nothing. It writes through the main pool (synchronous commit): a
// committed occurrence is never lost.
func startPeriodic(lc fx.Lifecycle, cfg config, db *bun.DB, clock ports.Clock, m *metrics.SweepMetrics, log *slog.Logger) error {
	commands := domain.Commands(appDomains)
	if len(commands) == 0 || !cfg.PeriodicEnabled {
		return nil
	}
	store, err := pgperiodic.NewStore(db)
	if err != nil {
		return err
	}
	r, err := periodic.NewRunner(store, commands, clock, periodic.RunnerConfig{
		Every: cfg.PeriodicEvery, CommittedFunc: m.PeriodicCommitted, SkippedFunc: m.PeriodicSkipped, FailedFunc: m.PeriodicFailed, Logger: log,
	})
	if err != nil {
		return err
	}
	lc.Append(fx.Hook{OnStart: r.Start, OnStop: r.Stop})
	return nil
}
