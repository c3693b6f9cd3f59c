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
	// EnqueueFailedFunc is told of each failed re-delivery (a metric).
	// Default: nothing.
	EnqueueFailedFunc func(table string)
}

// TaskRecovery is the task-recovery sweep (see the package doc). A task
// recovered while its old message still exists is delivered twice; the
// worker's claim and lease make the second delivery harmless.
type TaskRecovery struct {
	tables []ports.TaskTable
	clock  ports.Clock
	cfg    TaskRecoveryConfig
	log    *slog.Logger

	// undelivered holds, per table, recovered ids whose EnqueueFunc failed:
	// each pass tries them again first. They are Pending, so RecoverExpired
	// no longer returns them.
	undelivered map[string][]string

	svc startstop.Service
}

// NewTaskRecovery returns the sweep over tables. It does not start it.
// Every table needs a unique non-empty Name, a Store and an EnqueueFunc.
func NewTaskRecovery(tables []ports.TaskTable, clock ports.Clock, cfg TaskRecoveryConfig, log *slog.Logger) (*TaskRecovery, error) {
	cfg.Every = cmp.Or(cfg.Every, DefaultTaskRecoveryEvery)
	cfg.Batch = cmp.Or(cfg.Batch, DefaultTaskRecoveryBatch)
	switch {
	case clock == nil:
		return nil, errors.New("sweep: NewTaskRecovery needs a clock")
	case cfg.Every < MinTaskRecoveryEvery || cfg.Every > MaxTaskRecoveryEvery:
		return nil, fmt.Errorf("sweep: TaskRecoveryConfig.Every %s outside %s..%s", cfg.Every, MinTaskRecoveryEvery, MaxTaskRecoveryEvery)
	case cfg.Batch < 1 || cfg.Batch > 10_000:
		return nil, fmt.Errorf("sweep: TaskRecoveryConfig.Batch %d outside 1..10000", cfg.Batch)
	}
	seen := map[string]bool{}
	for i, tt := range tables {
		if err := checkName(tt.Name, seen); err != nil {
			return nil, fmt.Errorf("sweep: task table %d: %w", i, err)
		}
		if tt.Store == nil || tt.EnqueueFunc == nil {
			return nil, fmt.Errorf("sweep: task table %q needs a Store and an EnqueueFunc", tt.Name)
		}
	}
	if cfg.RecoveredFunc == nil {
		cfg.RecoveredFunc = func(string, int) {}
	}
	if cfg.EnqueueFailedFunc == nil {
		cfg.EnqueueFailedFunc = func(string) {}
	}
	if log == nil {
		log = slog.Default()
	}
	return &TaskRecovery{tables: tables, clock: clock, cfg: cfg, log: log, undelivered: map[string][]string{}}, nil
}

// Start runs a pass now and then every Config.Every in the background, and
// returns at once. Stop ends it; both follow startstop's contract.
func (r *TaskRecovery) Start(context.Context) error {
	r.svc.Start(func(ctx context.Context) { repeat(ctx, r.clock, r.cfg.Every, r.pass) })
	return nil
}

// Stop ends the sweep and waits for the pass in flight or for ctx.
func (r *TaskRecovery) Stop(ctx context.Context) error {
	if err := r.svc.Stop(ctx); err != nil {
		return fmt.Errorf("task recovery: %w", err)
	}
	return nil
}

func (r *TaskRecovery) pass(ctx context.Context) {
	if _, err := r.RunOnce(ctx); err != nil && ctx.Err() == nil {
		r.log.Error("task recovery failed; will retry", "err", err)
	}
}

// RunOnce recovers every registered table once: it first delivers again
// the ids an earlier pass could not, then returns expired tasks to Pending
// in batches and delivers each. It returns how many tasks it recovered,
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
	retry := r.undelivered[tt.Name]
	delete(r.undelivered, tt.Name)
	r.deliver(ctx, tt, retry)
	total := 0
	for ctx.Err() == nil {
		ids, err := tt.Store.RecoverExpired(ctx, r.clock.Now(), r.cfg.Batch)
		if err != nil {
			return total, fmt.Errorf("recover expired tasks: %w", err)
		}
		if len(ids) > 0 {
			total += len(ids)
			r.cfg.RecoveredFunc(tt.Name, len(ids))
			r.log.Warn("tasks whose worker stopped were returned to pending and delivered again",
				"task_table", tt.Name, "count", len(ids), "task_ids", ids)
			r.deliver(ctx, tt, ids)
		}
		if len(ids) < r.cfg.Batch {
			break
		}
	}
	if n := len(r.undelivered[tt.Name]); n > 0 {
		return total, fmt.Errorf("%d recovered tasks not delivered again yet (pending; retried next pass)", n)
	}
	return total, nil
}

// deliver calls EnqueueFunc for each id; failures are kept for the next
// pass.
// deliverTimeout bounds re-enqueueing one pass's recovered tasks.
const deliverTimeout = 30 * time.Second

func (r *TaskRecovery) deliver(ctx context.Context, tt ports.TaskTable, ids []string) {
	// Detached: the tasks are already Pending; a stop must not cut their
	// re-enqueue short and leave them without a message.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deliverTimeout)
	defer cancel()
	for _, id := range ids {
		if err := tt.EnqueueFunc(ctx, id); err != nil {
			r.cfg.EnqueueFailedFunc(tt.Name)
			r.log.Error("could not deliver a recovered task again; retrying next pass",
				"task_table", tt.Name, "task_id", id, "err", err)
			r.undelivered[tt.Name] = append(r.undelivered[tt.Name], id)
		}
	}
}

// repeat runs f now and then every period until ctx ends, waiting on clock.
func repeat(ctx context.Context, clock ports.Clock, period time.Duration, f func(context.Context)) {
	for {
		f(ctx)
		select {
		case <-ctx.Done():
			return
		case <-clock.After(period):
		}
	}
}

func checkName(name string, seen map[string]bool) error {
	switch {
	case name == "" || len(name) > maxTableName:
		return fmt.Errorf("name %q must be 1..%d bytes", name, maxTableName)
	case seen[name]:
		return fmt.Errorf("name %q registered twice", name)
	}
	seen[name] = true
	return nil
}
