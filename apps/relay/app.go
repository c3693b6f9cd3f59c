package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/uptrace/bun"
	"go.uber.org/fx"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redaction"
	"github.com/july/template/core/relay"
	"github.com/july/template/examples"
	"github.com/july/template/internal/appkit"
	"github.com/july/template/internal/syskeys"
)

// Domains adds the service's consumers to the relay, one fx option each
// (the examples' is wired here; a new service deletes that line).
var Domains = []fx.Option{
	examples.RelayModule, // examples: delete this line (and examples/) in a new service
}

func serve(ctx context.Context, cfg config, stdout io.Writer) error {
	log := appkit.NewLogger(stdout, cfg.LogLevel)
	return appkit.Serve(ctx, options(cfg, log), 30*time.Second,
		func() {
			log.Info("relay started", "owner", cfg.Owner, "loops", cfg.Loops, "admin_addr", cfg.AdminAddr)
		},
		func() { log.Info("relay stopping: finishing in-flight batches") })
}

// options is the whole relay graph; TestGraph validates it.
func options(cfg config, log *slog.Logger) fx.Option {
	return fx.Options(
		appkit.FxLogger(cfg.LogLevel, log),
		fx.Supply(cfg, log),
		fx.Supply(postgres.Config{URL: cfg.DatabaseURL, RuntimeParams: map[string]string{"application_name": "relay"}}),
		postgres.Module,
		fx.Supply(queue.ModuleConfig{
			RedisURL: cfg.RedisURL,
			Enqueuer: queue.Config{Queue: cfg.Queue},
			Server:   queue.ServerConfig{Queues: map[string]int{cfg.Queue: 1}, Concurrency: cfg.WorkerConcurrency, Logger: log},
		}),
		queue.Module,
		workerOption(cfg),
		fx.Provide(
			func() ports.Clock { return ports.ClockFunc(time.Now) },
			newRegistry,
			newOutboxStore,
			newRelay,
			newDeadLetter,
		),
		fx.Invoke(startRelay, startListener, startAdmin, startRetention),
		fx.Options(Domains...),
	)
}

// relayParams tune the outbox store's own pool, separate from the *bun.DB
// the hosted consumers use. Its writes (claim, complete, fail) commit
// without waiting for the WAL flush: a database crash can at worst lose the
// last few marks, which re-delivers those events (at least once, as
// designed) or forgets a claim. Consumers' business writes go through the
// module's *bun.DB and keep synchronous commits.
var relayParams = map[string]string{"application_name": "outbox-relay", "synchronous_commit": "off"}

// workerOption runs the Asynq worker unless WORKER_ENABLED=false (a relay
// that only relays, e.g. when consumers run in their own deployment).
func workerOption(cfg config) fx.Option {
	if !cfg.WorkerEnabled {
		return fx.Options()
	}
	return queue.RunWorker
}

func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// newOutboxStore opens the relay's own pool (asynchronous commit, see
// relayParams) and closes it on stop.
func newOutboxStore(lc fx.Lifecycle, cfg config) (*postgres.OutboxStore, error) {
	db, err := postgres.Open(context.Background(), postgres.Config{URL: cfg.DatabaseURL, RuntimeParams: relayParams})
	if err != nil {
		return nil, fmt.Errorf("open the relay's outbox pool: %w", err)
	}
	lc.Append(fx.StopHook(db.Close))
	return postgres.NewOutboxStore(db, postgres.OutboxConfig{})
}

func newRelay(cfg config, db *bun.DB, store *postgres.OutboxStore, pub ports.Publisher, clock ports.Clock, reg *prometheus.Registry, log *slog.Logger) (*relay.Relay, error) {
	cfg, err := withSystemConfig(cfg, db, log)
	if err != nil {
		return nil, err
	}
	red := &redaction.Redactor{}
	return relay.New(store, pub, clock, relay.Config{
		Owner:        cfg.Owner,
		Loops:        cfg.Loops,
		BatchSize:    cfg.BatchSize,
		LeaseFor:     cfg.LeaseTTL,
		PollInterval: cfg.PollInterval,
		Policy:       outbox.Policy{MaxAttempts: cfg.MaxAttempts},
	}, relay.Options{
		Logger:     log,
		Observer:   newRelayMetrics(reg),
		RandFunc:   rand.Float64,
		RedactFunc: func(s string) string { return outbox.SafeMessage(red.RedactText(s)) },
	})
}

// withSystemConfig fills the tuning the environment left unset from the
// registered system-config keys (internal/syskeys), read once at start: an
// operator changes them through the config API and restarts the relay, or
// pins them with the environment, which wins.
func withSystemConfig(cfg config, db *bun.DB, log *slog.Logger) (config, error) {
	store, err := postgres.NewConfigStore(db, postgres.NewOutboxAuditWriter(postgres.AuditConfig{}))
	if err != nil {
		return cfg, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	read := func(key string) (int64, error) {
		v, alert, err := syskeys.Startup(ctx, store, key)
		if alert != nil {
			log.Error(alert.Message, "alert_code", alert.Code, "config_key", alert.Key, "component", "relay")
		}
		return v.Int(), err
	}
	for _, f := range []struct {
		key   string
		unset bool
		set   func(int64)
	}{
		{syskeys.RelayBatchSize, cfg.BatchSize == 0, func(n int64) { cfg.BatchSize = int(n) }},
		{syskeys.RelayLeaseTTL, cfg.LeaseTTL == 0, func(n int64) { cfg.LeaseTTL = time.Duration(n) * time.Second }},
		{syskeys.RelayMaxAttempts, cfg.MaxAttempts == 0, func(n int64) { cfg.MaxAttempts = int(n) }},
	} {
		if !f.unset {
			continue
		}
		n, err := read(f.key)
		if err != nil {
			return cfg, err
		}
		f.set(n)
	}
	log.Info("relay tuning", "batch_size", cfg.BatchSize, "lease_ttl", cfg.LeaseTTL.String(), "max_attempts", cfg.MaxAttempts)
	return cfg, nil
}

// newDeadLetter is the worker's queue.DeadLetterFunc (see
// newDeadLetterFunc). It writes through the module's *bun.DB, not the
// relay's asynchronous-commit pool: the mark is the only durable record of
// the failure. Built only when the worker runs.
func newDeadLetter(db *bun.DB, clock ports.Clock, reg *prometheus.Registry, log *slog.Logger) (queue.DeadLetterFunc, error) {
	store, err := postgres.NewOutboxStore(db, postgres.OutboxConfig{})
	if err != nil {
		return nil, err
	}
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "outbox_consumer_failures_total",
		Help: "Delivered outbox events whose consumer gave up (now failed, alert); replay after fixing the cause.",
	}, []string{"event_type"})
	reg.MustRegister(failures)
	return newDeadLetterFunc(store, clock, failures, log), nil
}

func startRelay(lc fx.Lifecycle, r *relay.Relay, store *postgres.OutboxStore, clock ports.Clock, reg *prometheus.Registry, log *slog.Logger) {
	reg.MustRegister(newStatsCollector(store, clock, log))
	lc.Append(fx.Hook{OnStart: r.Start, OnStop: r.Stop})
}

func startListener(lc fx.Lifecycle, cfg config, r *relay.Relay, log *slog.Logger) {
	l := postgres.NewListener(cfg.DatabaseURL, postgres.OutboxChannel, r.Notify, log)
	lc.Append(fx.Hook{OnStart: l.Start, OnStop: l.Stop})
}

func startRetention(lc fx.Lifecycle, cfg config, store *postgres.OutboxStore, clock ports.Clock, reg *prometheus.Registry, log *slog.Logger) error {
	if cfg.Retention == 0 {
		return nil
	}
	job, err := relay.NewRetention(store, clock, cfg.Retention, 1000, log)
	if err != nil {
		return err
	}
	removed := prometheus.NewCounter(prometheus.CounterOpts{Name: "outbox_retention_removed_total", Help: "Delivered events removed by the retention job."})
	reg.MustRegister(removed) // only here: newRelayMetrics must not register it too
	job.RemovedFunc = func(n int) { removed.Add(float64(n)) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go func() { defer close(done); job.Run(ctx, 10*time.Minute) }()
			return nil
		},
		OnStop: func(stopCtx context.Context) error {
			cancel()
			select {
			case <-done:
				return nil
			case <-stopCtx.Done():
				return errors.New("retention job did not stop in time")
			}
		},
	})
	return nil
}
