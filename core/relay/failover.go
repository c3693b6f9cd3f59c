package relay

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/startstop"
)

// FailoverRedeliver settings: one default and one range each
// (DefaultRedeliverWindow is in redeliver.go).
const (
	MinRedeliverWindow = time.Second
	MaxRedeliverWindow = time.Hour
)

// LossMasterSwitch is the ports.LossSignal kind a FailoverRedeliver sends
// for each master switch.
const LossMasterSwitch = "master_switch"

// FailoverRedeliverConfig tunes a FailoverRedeliver. The zero value is
// valid.
type FailoverRedeliverConfig struct {
	// Window is how far back a switch reaches: every event delivered in
	// the Window before the switch was announced is published again.
	// Default: DefaultRedeliverWindow; range
	// MinRedeliverWindow..MaxRedeliverWindow.
	Window time.Duration
	// SignalFunc is told of each switch as a loss signal (the reconciler's
	// Signal, when it runs). Default: nothing.
	SignalFunc func(ports.LossSignal)
	// Logger receives one line per switch. Default: slog.Default().
	Logger *slog.Logger
}

// FailoverRedeliver publishes again what was delivered in the window
// before each queue master switch (ports.MasterSwitchWatcher): the old
// master may have dropped tasks it acknowledged, and their rows say
// Delivered, so no one else would send them (Redeliver). Switches are
// handled one at a time; a second waits for the first. Each switch is also
// a loss signal (Config.SignalFunc).
type FailoverRedeliver struct {
	reader  ports.OutboxDeliveredReader
	pub     ports.Publisher
	watcher ports.MasterSwitchWatcher
	clock   ports.Clock
	cfg     FailoverRedeliverConfig

	svc startstop.Service
	mu  sync.Mutex // one redelivery at a time
}

// NewFailoverRedeliver returns the re-publisher of reader's deliveries to
// pub on watcher's switches. It does not start it. A refused setting is a
// *startstop.ConfigError.
func NewFailoverRedeliver(reader ports.OutboxDeliveredReader, pub ports.Publisher, watcher ports.MasterSwitchWatcher,
	clock ports.Clock, cfg FailoverRedeliverConfig) (*FailoverRedeliver, error) {
	cfg.Window = cmp.Or(cfg.Window, DefaultRedeliverWindow)
	if reader == nil || pub == nil || watcher == nil || clock == nil {
		return nil, &startstop.ConfigError{Pkg: "relay", Field: "NewFailoverRedeliver",
			Want: "pass a delivered-events reader, a publisher, a master-switch watcher and a clock"}
	}
	if err := startstop.CheckRange("relay", "FailoverRedeliverConfig", "Window", cfg.Window, MinRedeliverWindow, MaxRedeliverWindow); err != nil {
		return nil, err
	}
	if cfg.SignalFunc == nil {
		cfg.SignalFunc = func(ports.LossSignal) {}
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return &FailoverRedeliver{reader: reader, pub: pub, watcher: watcher, clock: clock, cfg: cfg}, nil
}

// Start watches for switches in the background and returns at once. Stop
// ends it; both follow startstop's contract.
func (f *FailoverRedeliver) Start(context.Context) error {
	f.svc.Start(f.run)
	return nil
}

// Stop ends the watch, cancels a redelivery in flight, and waits for both
// or for ctx.
func (f *FailoverRedeliver) Stop(ctx context.Context) error {
	if err := f.svc.Stop(ctx); err != nil {
		return fmt.Errorf("failover redeliver: %w", err)
	}
	return nil
}

func (f *FailoverRedeliver) run(ctx context.Context) {
	var wg sync.WaitGroup
	f.watcher.WatchMasterSwitch(ctx, func(newMaster string) {
		f.cfg.SignalFunc(ports.LossSignal{Kind: LossMasterSwitch, Detail: "sentinel announced a new master"})
		from := f.clock.Now().Add(-f.cfg.Window)
		wg.Go(func() { f.redeliver(ctx, newMaster, from) }) // the watcher keeps listening meanwhile
	})
	wg.Wait()
}

// redeliver publishes again what was delivered since from, after any
// earlier switch's redelivery has finished.
func (f *FailoverRedeliver) redeliver(ctx context.Context, newMaster string, from time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	start := f.clock.Now()
	n, err := Redeliver(ctx, f.reader, f.pub, f.clock, from)
	if err != nil {
		f.cfg.Logger.Error("redis master switched; publishing the window's deliveries again failed part-way: replay the rest with relay outbox replay",
			"new_master", newMaster, "since", from, "published", n, "error", err)
		return
	}
	f.cfg.Logger.Warn("redis master switched; published the window's deliveries again (the queue absorbs those it still holds)",
		"new_master", newMaster, "since", from, "published", n, "took_ms", f.clock.Now().Sub(start).Milliseconds())
}
