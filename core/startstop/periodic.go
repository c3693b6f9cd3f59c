package startstop

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/july/template/core/ports"
)

// PeriodicConfig configures a Periodic.
type PeriodicConfig struct {
	// Name names the service in its stop error and its failure log, e.g.
	// "task recovery". Required.
	Name string
	// Every is the pause between the end of one pass and the start of the
	// next. Required (> 0); the service that embeds a Periodic declares
	// its own default and range.
	Every time.Duration
	// Logger receives "<Name> failed; will retry" for each failed pass.
	// Default: slog.Default().
	Logger *slog.Logger
}

// PassFunc is one pass of a periodic service. An error is logged (unless
// the service is stopping) and the next pass runs as planned.
type PassFunc func(ctx context.Context) error

// Periodic is the base of every periodic background service (the sweeps,
// the retention jobs, the relay tuner): it runs a pass at Start and then
// every Config.Every, waiting on a ports.Clock, until Stop. A service
// embeds a *Periodic for its Start and Stop, or calls them from its own.
// Start and Stop follow Service's contract.
type Periodic struct {
	pass  PassFunc
	clock ports.Clock
	cfg   PeriodicConfig
	svc   Service
}

// NewPeriodic returns a Periodic running pass. It does not start it.
func NewPeriodic(pass PassFunc, clock ports.Clock, cfg PeriodicConfig) (*Periodic, error) {
	switch {
	case pass == nil:
		return nil, &ConfigError{Pkg: "startstop", Field: "NewPeriodic pass", Want: "pass a PassFunc"}
	case clock == nil:
		return nil, &ConfigError{Pkg: "startstop", Field: "NewPeriodic clock", Want: "pass a ports.Clock (ports.SystemClock in production)"}
	case cfg.Name == "":
		return nil, &ConfigError{Pkg: "startstop", Config: "PeriodicConfig", Field: "Name", Value: `""`, Want: "name the service"}
	case cfg.Every <= 0:
		return nil, &ConfigError{Pkg: "startstop", Config: "PeriodicConfig", Field: "Every", Value: cfg.Every, Want: "set a positive interval"}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Periodic{pass: pass, clock: clock, cfg: cfg}, nil
}

// Every returns the pause between passes.
func (p *Periodic) Every() time.Duration { return p.cfg.Every }

// Start runs a pass now and then every Config.Every in the background, and
// returns at once. It does nothing while already running.
func (p *Periodic) Start(context.Context) error {
	p.svc.Start(p.run)
	return nil
}

// Stop ends the loop and waits for the pass in flight or for ctx. It is
// safe before Start and more than once.
func (p *Periodic) Stop(ctx context.Context) error {
	if err := p.svc.Stop(ctx); err != nil {
		return fmt.Errorf("%s: %w", p.cfg.Name, err)
	}
	return nil
}

func (p *Periodic) run(ctx context.Context) {
	for {
		if err := p.pass(ctx); err != nil && ctx.Err() == nil {
			p.cfg.Logger.Error(p.cfg.Name+" failed; will retry", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-p.clock.After(p.cfg.Every):
		}
	}
}
