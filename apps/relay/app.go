package main

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"
	"go.uber.org/fx"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/metrics"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/adapters/tracing"
	"github.com/july/template/apps/domain"
	"github.com/july/template/apps/internal/domains"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redaction"
	"github.com/july/template/core/relay"
	"github.com/july/template/internal/appkit"
)

// appDomains are the domains the relay runs: apps/internal/domains.All
// (the end-to-end tests' build adds a fault-injection one, fault_e2e.go).
var appDomains = domains.All()

func serve(ctx context.Context, cfg config, stdout io.Writer) error {
	log := appkit.NewLogger(stdout, cfg.LogLevel, httpx.LogIDs, queue.LogIDs)
	return appkit.Serve(ctx, options(cfg, log), cfg.DrainDelay+cfg.ShutdownTimeout+15*time.Second,
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
		fx.Supply(cfg.Tracing),
		tracing.Module,
		fx.Supply(postgres.Config{URL: cfg.DatabaseURL, DirectURL: cfg.DirectURL, RuntimeParams: map[string]string{"application_name": "relay"},
			RelayClaimBytes: claimBytes(cfg.Loops)}),
		postgres.Module,
		postgres.RelayModule,
		fx.Supply(queue.ModuleConfig{
			RedisURL:  cfg.RedisURL,
			Publisher: queue.Config{Queue: cfg.Queue, MaxRetry: cfg.WorkerMaxRetry},
			Server: queue.ServerConfig{Queues: map[string]int{cfg.Queue: 1}, Concurrency: cfg.WorkerConcurrency, Logger: log,
				RetryBase: cfg.WorkerRetryBase, RetryMax: cfg.WorkerRetryMax, ShutdownTimeout: cfg.ShutdownTimeout,
				TaskCheckInterval: cfg.WorkerTaskCheck},
		}),
		queue.Module,
		metrics.Module,
		metrics.RelayModule,
		fx.Supply(metrics.Component("relay"), buildInfo()),
		metrics.ProbeModule,
		postgres.MetricsModule,
		queue.MetricsModule,
		durabilityOption,
		historyOption(cfg), // before the worker and the relays start
		workerOption(cfg),
		fx.Provide(
			func() ports.Clock { return ports.SystemClock },
			newConfigService,
			fx.Annotate(newRelay, fx.As(fx.Self()), fx.As(new(postgres.Notifier))),
			fx.Annotate(newDeadLetter, fx.As(new(queue.DeadLetterRecorder))),
			queue.AsConsumer(queue.AuditConsumer),
			newDomainParts,
		),
		fx.Invoke(
			startRelay,
			registerOutboxStats,
			startRetention,
			startTaskRecovery,
			startIdempotencyRetention,
			startPeriodic,
		),
		evidenceOption,
		reconcileOption(cfg),
		tuningOption(cmp.Or(cfg.TuningRefresh, TuningRefresh)),
		adminOption, // after every other hook: stops first, see newAdmin
	)
}

// InFlightBytes is the payload bytes all of a relay's loops may hold at
// once (two loops' worth of pgoutbox.DefaultClaimBytes): each claim gets
// its share, at least one payload at the cap. With payloads at the cap it
// peaks at about 200 MiB of RSS whatever RELAY_LOOPS is (relaysbench
// -payload), inside the pod's 512 Mi; a claim's budget alone let 64 loops
// take 2.5 GiB.
const InFlightBytes = 2 * pgoutbox.DefaultClaimBytes

func claimBytes(loops int) int64 {
	return max(outbox.MaxPayloadBytes, InFlightBytes/int64(max(loops, 1)))
}

// workerOption runs the Asynq worker unless WORKER_ENABLED=false (a relay
// that only relays, e.g. when consumers run in their own deployment).
func workerOption(cfg config) fx.Option {
	if !cfg.WorkerEnabled {
		return fx.Options()
	}
	return queue.RunWorker
}

// newConfigService reads the relay's registered keys (no cache: they are
// read once, at start).
func newConfigService(store ports.ConfigStore, clock ports.Clock, log *slog.Logger) (*configsvc.Service, error) {
	reg, err := domains.Registry() // the same keys as the API's and migrate's
	if err != nil {
		return nil, err
	}
	return configsvc.New(reg, store, nil, clock, configsvc.Options{Logger: log})
}

// domainDeps is what the relay gives every domain (domain.RelayDeps).
type domainDeps struct {
	fx.In
	DB     *bun.DB
	Clock  ports.Clock
	Config *configsvc.Service
	Logger *slog.Logger
	Env    config
}

// domainParts are the domains' relay sides: their consumers join the
// worker's, and their tables are what the task-recovery sweep and the
// idempotency retention go over (startTaskRecovery,
// startIdempotencyRetention).
type domainParts struct {
	fx.Out
	Consumers         []queue.Consumer `group:"asynq.consumers,flatten"` // queue.ConsumerGroup
	TaskTables        []ports.TaskTable
	IdempotencyTables []ports.IdempotencyTable
}

func newDomainParts(p domainDeps) (domainParts, error) {
	r, err := domain.BuildRelay(appDomains, domain.RelayDeps{DB: p.DB, Clock: p.Clock, Config: p.Config, Logger: p.Logger,
		Settings: p.Env.DomainEnv})
	if err != nil {
		return domainParts{}, err
	}
	return domainParts{Consumers: r.Consumers, TaskTables: r.TaskTables, IdempotencyTables: r.IdempotencyTables}, nil
}

type relayParams struct {
	fx.In
	Config   config
	Service  *configsvc.Service
	Pub      ports.Publisher
	Clock    ports.Clock
	Observer relay.Observer
	Log      *slog.Logger
	Store    ports.OutboxStore `name:"relay_outbox"` // postgres.RelayOutboxName
	Tracing  *tracing.Provider
}

func newRelay(p relayParams) (*relay.Relay, error) {
	cfg := tuning(p.Config, p.Service, p.Log)
	red := &redaction.Redactor{}
	var store ports.OutboxRelayStore = p.Store
	pub := p.Pub
	var tracer relay.BatchTracer
	if p.Tracing.Enabled() { // off: not even a no-op span per batch
		store, pub, tracer = tracing.Store(store, p.Tracing), tracing.Publisher(pub, p.Tracing), tracing.NewRelay(p.Tracing)
	}
	return relay.New(store, pub, p.Clock, relay.Config{
		Owner:        cfg.Owner,
		Loops:        cfg.Loops,
		BatchSize:    cfg.BatchSize,
		LeaseFor:     cfg.LeaseTTL,
		PollInterval: cfg.PollInterval,
		Policy:       outbox.Policy{MaxAttempts: cfg.MaxAttempts},
		StopTimeout:  cfg.ShutdownTimeout,
	}, relay.Options{
		Logger:     p.Log,
		Observer:   p.Observer,
		RandFunc:   rand.Float64,
		RedactFunc: func(s string) string { return outbox.SafeMessage(red.RedactText(s)) },
		Tracer:     tracer,
	})
}

// tuning fills the settings the environment left unset from the
// registered system-config keys (configsvc.Service.RelayTuning), at start
// and then every TuningRefresh (tuningOption): an operator changes them
// through the config API and the relay applies them without a restart,
// unless the environment pins them. An unreachable or broken key falls
// back to its default with an alert (configsvc.Service.Value).
func tuning(cfg config, svc *configsvc.Service, log *slog.Logger) config {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t := svc.RelayTuning(ctx, relay.Tuning{BatchSize: cfg.BatchSize, LeaseFor: cfg.LeaseTTL, MaxAttempts: cfg.MaxAttempts})
	cfg.BatchSize, cfg.LeaseTTL, cfg.MaxAttempts = t.BatchSize, t.LeaseFor, t.MaxAttempts
	log.Info("relay tuning", "batch_size", cfg.BatchSize, "lease_ttl", cfg.LeaseTTL.String(), "max_attempts", cfg.MaxAttempts)
	return cfg
}

// newDeadLetter records consumers' final failures through the module's
// ports.OutboxStore (synchronous commit: the mark is the only durable
// record of the failure).
func newDeadLetter(store ports.OutboxStore, clock ports.Clock, failed metrics.ConsumerFailedFunc, log *slog.Logger) (*relay.DeadLetter, error) {
	return relay.NewDeadLetter(store, clock, relay.DeadLetterConfig{MarkedFunc: failed}, log)
}

func startRelay(lc fx.Lifecycle, r *relay.Relay) {
	lc.Append(fx.Hook{OnStart: r.Start, OnStop: r.Stop})
}

// relayStore is the relay's own outbox store (postgres.RelayModule's, on
// its pool with asynchronous commit), not Module's.
type relayStore struct {
	fx.In
	Store ports.OutboxStore `name:"relay_outbox"` // postgres.RelayOutboxName
}

func registerOutboxStats(reg prometheus.Registerer, s relayStore, clock ports.Clock, log *slog.Logger) error {
	return metrics.RegisterOutboxStats(reg, s.Store, clock, log)
}

func startRetention(lc fx.Lifecycle, cfg config, s relayStore, clock ports.Clock, removed metrics.RetentionRemovedFunc, log *slog.Logger) error {
	if cfg.Retention == 0 {
		return nil
	}
	job, err := relay.NewRetention(s.Store, clock, relay.RetentionConfig{Window: cfg.Retention, RemovedFunc: removed, Logger: log})
	if err != nil {
		return err
	}
	lc.Append(fx.Hook{OnStart: job.Start, OnStop: job.Stop})
	return nil
}

// buildInfo is the link-time stamp (appkit.BuildInfo) for service_build_info.
func buildInfo() metrics.BuildInfo {
	b := appkit.BuildInfo()
	return metrics.BuildInfo{Version: b.Version, Commit: b.Commit, TemplateVersion: b.TemplateVersion, GoVersion: b.GoVersion}
}
