package periodic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/startstop"
)

// Runner settings.
const (
	DefaultRunnerEvery = 5 * time.Second
	MinRunnerEvery     = 50 * time.Millisecond
	MaxRunnerEvery     = time.Hour
)

// RunnerConfig tunes a Runner.
type RunnerConfig struct {
	// Every is the pause between passes: how late after its scheduled
	// time an occurrence is committed at most (plus a pass's own time).
	// Default DefaultRunnerEvery; range MinRunnerEvery..MaxRunnerEvery.
	Every time.Duration
	// CommittedFunc is told how many occurrences of a command a pass
	// committed; SkippedFunc how many its policy skipped (metrics).
	// Default: nothing.
	CommittedFunc func(command string, n int)
	SkippedFunc   func(command string, n int)
	// FailedFunc is told of each failed pass over a command (a metric;
	// the error is logged). Default: nothing.
	FailedFunc func(command string)
	// Logger receives the runner's log lines. Default: slog.Default().
	Logger *slog.Logger
}

// Runner commits the due occurrences of periodic commands: every pass,
// for each command, it asks the store to lock the command's cursor, runs
// Due and appends one outbox event per occurrence committed. Every relay
// runs one; the store's lock makes them commit each occurrence once.
type Runner struct {
	// Periodic gives the runner Start (a pass now, then every
	// Config.Every) and Stop.
	*startstop.Periodic

	store    ports.PeriodicCommandStore
	commands []Command
	clock    ports.Clock
	cfg      RunnerConfig
}

// NewRunner returns a runner of commands over store. It does not start
// it. A refused command is a *ConfigError, a refused setting a
// *startstop.ConfigError; no commands is ErrNoCommands.
func NewRunner(store ports.PeriodicCommandStore, commands []Command, clock ports.Clock, cfg RunnerConfig) (*Runner, error) {
	if len(commands) == 0 {
		return nil, ErrNoCommands
	}
	if store == nil {
		return nil, &startstop.ConfigError{Pkg: "periodic", Field: "NewRunner store", Want: "pass a ports.PeriodicCommandStore (pgperiodic.NewStore)"}
	}
	cfg.Every = cmp.Or(cfg.Every, DefaultRunnerEvery)
	if err := startstop.CheckRange("periodic", "RunnerConfig", "Every", cfg.Every, MinRunnerEvery, MaxRunnerEvery); err != nil {
		return nil, err
	}
	if cfg.CommittedFunc == nil {
		cfg.CommittedFunc = func(string, int) {}
	}
	if cfg.SkippedFunc == nil {
		cfg.SkippedFunc = func(string, int) {}
	}
	if cfg.FailedFunc == nil {
		cfg.FailedFunc = func(string) {}
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	seen := map[string]bool{}
	valid := make([]Command, 0, len(commands))
	for _, c := range commands {
		v, err := c.Validate()
		if err != nil {
			return nil, err
		}
		if seen[v.Name] {
			return nil, &ConfigError{Command: v.Name, Field: "Name", Want: "declare each command once; give the second another name"}
		}
		seen[v.Name] = true
		valid = append(valid, v)
	}
	r := &Runner{store: store, commands: valid, clock: clock, cfg: cfg}
	var err error
	r.Periodic, err = startstop.NewPeriodic(r.pass, clock, startstop.PeriodicConfig{Name: "periodic commands", Every: cfg.Every, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("periodic: NewRunner: %w", err)
	}
	return r, nil
}

// RunOnce runs one pass over every command and returns how many
// occurrences it committed. A command that fails does not stop the
// others; the errors are joined.
func (r *Runner) RunOnce(ctx context.Context) (int, error) {
	total := 0
	var errs []error
	for _, c := range r.commands {
		if ctx.Err() != nil {
			break
		}
		n, err := r.advance(ctx, c)
		total += n
		errs = append(errs, err) // the store's error names the command
	}
	return total, errors.Join(errs...)
}

func (r *Runner) advance(ctx context.Context, c Command) (int, error) {
	now := r.clock.Now()
	var plan Plan
	res, err := r.store.Advance(ctx, c.Name, now, func(cursor time.Time) ([]outbox.Event, time.Time, error) {
		plan = Due(c, cursor, now)
		events := make([]outbox.Event, 0, len(plan.Commit))
		for _, o := range plan.Commit {
			ev, err := Build(c, o, now)
			if err != nil {
				return nil, cursor, err // names the occurrence; the store adds the command
			}
			events = append(events, ev)
		}
		return events, plan.Cursor, nil
	})
	if err != nil {
		r.cfg.FailedFunc(c.Name)
		return 0, err
	}
	if res.Created || res.Busy {
		return 0, nil
	}
	if n := res.Appended + res.Existing; n > 0 {
		r.cfg.CommittedFunc(c.Name, n)
		r.cfg.Logger.Info("periodic command committed", "command", c.Name, "occurrences", n,
			"first", plan.Commit[0].At.Format(time.RFC3339Nano), "last", plan.Commit[len(plan.Commit)-1].At.Format(time.RFC3339Nano),
			"already_stored", res.Existing)
	}
	if plan.Skipped > 0 {
		r.cfg.SkippedFunc(c.Name, plan.Skipped)
		r.cfg.Logger.Warn("periodic command skipped missed occurrences", "command", c.Name, "skipped", plan.Skipped,
			"policy", c.CatchUp.String(), "cursor", plan.Cursor.Format(time.RFC3339Nano))
	}
	return res.Appended, nil
}

// Build returns the event of occurrence o of the validated command c:
// c.Event's parameters with EventID o.ID, Now now, and RequestID and
// CorrelationID o.ID where c.Event left them empty.
func Build(c Command, o Occurrence, now time.Time) (outbox.Event, error) {
	p, err := c.Event(o)
	if err != nil {
		return outbox.Event{}, fmt.Errorf("build the event of %s: %w", o.At.Format(time.RFC3339Nano), err)
	}
	p.EventID, p.Now = o.ID, now
	p.RequestID = cmp.Or(p.RequestID, o.ID)
	p.CorrelationID = cmp.Or(p.CorrelationID, o.ID)
	ev, err := outbox.New(p)
	if err != nil {
		return outbox.Event{}, fmt.Errorf("the event of %s: %w", o.At.Format(time.RFC3339Nano), err)
	}
	return ev, nil
}

func (r *Runner) pass(ctx context.Context) error {
	_, err := r.RunOnce(ctx)
	return err
}
