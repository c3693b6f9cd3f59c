package configsvc

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
	"github.com/july/template/core/startstop"
	"github.com/july/template/core/sysconfig"
)

// RelayTuner settings: one default and one range each.
const (
	// DefaultRelayTuneEvery is how often a RelayTuner re-reads the relay's
	// keys, so a super admin's change applies without a restart within
	// this bound, well inside the config cache's DefaultCacheTTL.
	DefaultRelayTuneEvery = 30 * time.Second
	MinRelayTuneEvery     = 10 * time.Millisecond
	MaxRelayTuneEvery     = time.Hour

	// relayTuneTimeout bounds one read of the keys and one announcement.
	relayTuneTimeout = 5 * time.Second
)

// RelayTuning returns pinned with its zero fields read from the registered
// keys relay.delivery.* (KeyRelayBatchSize, KeyRelayLeaseTTL,
// KeyRelayMaxAttempts). An unreachable or broken key falls back to its
// default with an alert (Value).
func (s *Service) RelayTuning(ctx context.Context, pinned relay.Tuning) relay.Tuning {
	read := func(key string) int64 {
		v, _ := s.Value(ctx, key) // the keys are registered: no error
		return v.Int()
	}
	t := pinned
	if t.BatchSize == 0 {
		t.BatchSize = int(read(KeyRelayBatchSize))
	}
	if t.LeaseFor == 0 {
		t.LeaseFor = time.Duration(read(KeyRelayLeaseTTL)) * time.Second
	}
	if t.MaxAttempts == 0 {
		t.MaxAttempts = int(read(KeyRelayMaxAttempts))
	}
	return t
}

// Tunable is what a RelayTuner retunes (*relay.Relay).
type Tunable interface {
	Tuning() relay.Tuning
	Retune(relay.Tuning)
}

// RelayTunerConfig tunes a RelayTuner.
type RelayTunerConfig struct {
	// Owner names this process in the pins it announces (the relay's
	// Config.Owner). Required.
	Owner string
	// Pinned holds the settings this process's environment fixes; they
	// are never re-read. Zero fields follow the registered keys.
	Pinned relay.Tuning
	// Pins are announced for the config API's pinned_by: one per key the
	// environment pins, naming its source. Default: none.
	Pins []sysconfig.Pin
	// Every is the pause between re-reads. Default:
	// DefaultRelayTuneEvery; range MinRelayTuneEvery..MaxRelayTuneEvery.
	Every time.Duration
	// Logger receives a line per change and per failed announcement.
	// Default: slog.Default().
	Logger *slog.Logger
}

// RelayTuner re-applies the relay's registered keys every Config.Every, so
// an operator's change through the config API reaches the running relay
// without a restart, and announces the keys the environment pins
// (ports.ConfigPins), so the config API shows them as pinned_by and
// refuses changes that would do nothing here. It announces at Start and at
// each pass, and withdraws the pins at Stop; a crashed relay's age out.
type RelayTuner struct {
	svc   *Service
	relay Tunable
	pins  ports.ConfigPins
	clock ports.Clock
	cfg   RelayTunerConfig

	loop    *startstop.Periodic
	started bool // owned by the pass: the first pass only announces
}

// NewRelayTuner returns the tuner of r over svc's keys. It does not start
// it. A refused setting is a *startstop.ConfigError.
func NewRelayTuner(svc *Service, r Tunable, pins ports.ConfigPins, clock ports.Clock, cfg RelayTunerConfig) (*RelayTuner, error) {
	cfg.Every = cmp.Or(cfg.Every, DefaultRelayTuneEvery)
	switch {
	case svc == nil || r == nil || pins == nil:
		return nil, &startstop.ConfigError{Pkg: "configsvc", Field: "NewRelayTuner", Want: "pass the config service, the relay and the pins store"}
	case cfg.Owner == "":
		return nil, &startstop.ConfigError{Pkg: "configsvc", Config: "RelayTunerConfig", Field: "Owner", Value: `""`,
			Want: "set the relay's owner id, e.g. relay-<host>-<pid>"}
	}
	if err := startstop.CheckRange("configsvc", "RelayTunerConfig", "Every", cfg.Every, MinRelayTuneEvery, MaxRelayTuneEvery); err != nil {
		return nil, err
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	t := &RelayTuner{svc: svc, relay: r, pins: pins, clock: clock, cfg: cfg}
	var err error
	t.loop, err = startstop.NewPeriodic(t.pass, clock, startstop.PeriodicConfig{Name: "relay tuner", Every: cfg.Every, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("configsvc: NewRelayTuner: %w", err)
	}
	return t, nil
}

// Start announces the pins and re-reads the keys every Config.Every in the
// background, and returns at once.
func (t *RelayTuner) Start(ctx context.Context) error { return t.loop.Start(ctx) }

// Stop ends the loop, waiting for a pass in flight or for ctx, then
// withdraws the pins (a failure is logged: they age out).
func (t *RelayTuner) Stop(ctx context.Context) error {
	err := t.loop.Stop(ctx)
	if werr := t.pins.Withdraw(ctx, t.cfg.Owner); werr != nil {
		t.cfg.Logger.Warn("relay: withdrawing environment-pinned config keys failed; they age out within two minutes", "error", werr.Error())
	}
	return err
}

func (t *RelayTuner) pass(ctx context.Context) error {
	t.announce(ctx)
	if !t.started { // the relay read the keys when it was built
		t.started = true
		return nil
	}
	t.retune(ctx)
	return nil
}

func (t *RelayTuner) announce(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, relayTuneTimeout)
	defer cancel()
	if err := t.pins.Announce(ctx, t.cfg.Owner, t.cfg.Pins, t.clock.Now()); err != nil && ctx.Err() == nil {
		t.cfg.Logger.Warn("relay: announcing environment-pinned config keys failed; the config API may not show them until the next try", "error", err.Error())
	}
}

// retune reads the unpinned keys and applies any change. The read is not
// cut short by a stop (a cancelled read would fall back to the defaults
// with an alert); the change is not applied once stopping.
func (t *RelayTuner) retune(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), relayTuneTimeout)
	want := t.svc.RelayTuning(rctx, t.cfg.Pinned)
	cancel()
	if cur := t.relay.Tuning(); cur != want && ctx.Err() == nil {
		t.relay.Retune(want)
		t.cfg.Logger.Info("relay tuning changed", "batch_size", want.BatchSize, "lease_ttl", want.LeaseFor.String(), "max_attempts", want.MaxAttempts)
	}
}
