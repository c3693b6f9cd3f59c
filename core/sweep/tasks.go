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

// TaskRecovery settings: one default and one range each.
const (
	DefaultTaskRecoveryEvery = 15 * time.Second
	MinTaskRecoveryEvery     = time.Second
	MaxTaskRecoveryEvery     = time.Hour

	// DefaultTaskRecoveryBatch is the default TaskRecoveryConfig.Batch.
	DefaultTaskRecoveryBatch = 100
)

// maxTableName bounds a registered table's Name (a metric label).
const maxTableName = 64

// TaskRecoveryConfig tunes a TaskRecovery. The zero value is valid.
type TaskRecoveryConfig struct {
	// Every is the pause between passes. Default: DefaultTaskRecoveryEvery;
	// range MinTaskRecoveryEvery..MaxTaskRecoveryEvery.
	Every time.Duration
	// Batch caps one RecoverExpired call; a pass repeats it until a call
	// returns fewer. Default: DefaultTaskRecoveryBatch; 1..10000.
	Batch int
	// RecoveredFunc is told, per table and pass, how many tasks went back
	// to Pending (a metric). Default: nothing.
	RecoveredFunc func(table string, n int)
	// EnqueueFailedFunc is told of each failed TaskTable.Recover call (a
	// metric): its tasks stay expired and the next pass tries again.
	// Default: nothing.
	EnqueueFailedFunc func(table string)
	// Logger receives the sweep's log lines. Default: slog.Default().
	Logger *slog.Logger
}

// TaskRecovery is the task-recovery sweep (see the package doc). A task
// recovered while its old message still exists is delivered twice; the
// worker's claim and lease make the second delivery harmless.
type TaskRecovery struct {
	// Periodic gives the sweep Start (a pass now, then every
	// Config.Every) and Stop.
	*startstop.Periodic

	tables []ports.TaskTable
	clock  ports.Clock
	cfg    TaskRecoveryConfig
	log    *slog.Logger
}

// NewTaskRecovery returns the sweep over tables. It does not start it.
// Every table needs a unique non-empty Name, a Store and a Recover.
// A refused setting is a *startstop.ConfigError.
func NewTaskRecovery(tables []ports.TaskTable, clock ports.Clock, cfg TaskRecoveryConfig) (*TaskRecovery, error) {
	cfg.Every = cmp.Or(cfg.Every, DefaultTaskRecoveryEvery)
	cfg.Batch = cmp.Or(cfg.Batch, DefaultTaskRecoveryBatch)
	if err := cmp.Or(
		startstop.CheckRange("sweep", "TaskRecoveryConfig", "Every", cfg.Every, MinTaskRecoveryEvery, MaxTaskRecoveryEvery),
		startstop.CheckRange("sweep", "TaskRecoveryConfig", "Batch", cfg.Batch, 1, 10_000),
	); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, tt := range tables {
		if err := checkName(fmt.Sprintf("task table %d", i), tt.Name, seen); err != nil {
			return nil, err
		}
		if tt.Store == nil || tt.Recover == nil {
			return nil, &startstop.ConfigError{Pkg: "sweep", Field: fmt.Sprintf("task table %q", tt.Name),
				Want: "register it with a Store and a Recover (pgtasks.NewTaskTable)"}
		}
	}
	if cfg.RecoveredFunc == nil {
		cfg.RecoveredFunc = func(string, int) {}
	}
	if cfg.EnqueueFailedFunc == nil {
		cfg.EnqueueFailedFunc = func(string) {}
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	r := &TaskRecovery{tables: tables, clock: clock, cfg: cfg, log: cfg.Logger}
	var err error
	r.Periodic, err = startstop.NewPeriodic(func(ctx context.Context) error {
		_, err := r.RunOnce(ctx)
		return err
	}, clock, startstop.PeriodicConfig{Name: "task recovery", Every: cfg.Every, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("sweep: NewTaskRecovery: %w", err)
	}
	return r, nil
}

// RunOnce recovers every registered table once: it returns expired tasks
// to Pending and has them delivered again, in batches. It returns how many tasks it recovered,
// and the tables' errors joined (one table's failure does not stop the
// others). It is not safe for concurrent use with itself; run it from one
// goroutine (Start does).
func (r *TaskRecovery) RunOnce(ctx context.Context) (int, error) {
	total := 0
	var errs []error
	for _, tt := range r.tables {
		n, err := r.recoverTable(ctx, tt)
		total += n
		if err != nil {
			errs = append(errs, fmt.Errorf("task table %s: %w", tt.Name, err))
		}
	}
	return total, errors.Join(errs...)
}

func (r *TaskRecovery) recoverTable(ctx context.Context, tt ports.TaskTable) (int, error) {
	total := 0
	for ctx.Err() == nil {
		ids, err := tt.Recover(ctx, r.clock.Now(), r.cfg.Batch)
		if err != nil {
			r.cfg.EnqueueFailedFunc(tt.Name)
			return total, fmt.Errorf("recover expired tasks and deliver them again (they stay expired; retried next pass): %w", err)
		}
		if len(ids) > 0 {
			total += len(ids)
			r.cfg.RecoveredFunc(tt.Name, len(ids))
			r.log.Warn("tasks whose worker stopped were returned to pending and delivered again",
				"task_table", tt.Name, "count", len(ids), "task_ids", ids)
		}
		if len(ids) < r.cfg.Batch {
			break
		}
	}
	return total, nil
}

// checkName refuses a table name that is empty, too long for a metric
// label, or registered twice.
func checkName(table, name string, seen map[string]bool) error {
	switch {
	case name == "" || len(name) > maxTableName:
		return &startstop.ConfigError{Pkg: "sweep", Field: table + " Name", Value: fmt.Sprintf("%q", name), Want: fmt.Sprintf("name it in 1..%d bytes", maxTableName)}
	case seen[name]:
		return &startstop.ConfigError{Pkg: "sweep", Field: table + " Name", Value: fmt.Sprintf("%q", name), Want: "register each table once"}
	}
	seen[name] = true
	return nil
}
