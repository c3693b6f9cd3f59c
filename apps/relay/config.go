package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/tracing"
	"github.com/july/template/apps/domain"
	"github.com/july/template/core/periodic"
	"github.com/july/template/core/relay"
	"github.com/july/template/core/sweep"
	"github.com/july/template/internal/envconf"
)

var envHelp = fmt.Sprintf(`  DATABASE_URL         postgres URL (required); may be a pooler in transaction mode (PgBouncer)
  DATABASE_DIRECT_URL  a direct connection to the same database for the LISTEN that wakes the
                       relay on commits (default DATABASE_URL). The relay checks at start and
                       after every reconnect that its own NOTIFY arrives; when it does not (a
                       pooler), it logs one WARN, sets outbox_listen_working 0 and polls every
                       %s instead of waiting for RELAY_POLL_INTERVAL
  REDIS_URL            redis://, redis-sentinel:// or redis-cluster:// for Asynq (required; outbox replay uses it
                       to delete the replayed events' retained tasks so they run again)
  LOG_LEVEL            debug|info|warn|error (default info)
  ADMIN_ADDR           health and /metrics listener (default POD_IP:9090 when POD_IP is set,
                       else 127.0.0.1:9090: never every interface unless you set ":9090")
  ADMIN_PPROF          true serves Go's profiles under /debug/pprof/ on ADMIN_ADDR
                       (default false: a profile costs CPU while it runs)
  POD_IP               this pod's IP (Kubernetes downward API status.podIP, as deploy/k8s
                       sets it): the default ADMIN_ADDR binds it so probes and Prometheus
                       reach the admin port and nothing else listens
  RELAY_OWNER          lease owner id (default relay-<host>-<pid>)
  RELAY_LOOPS          concurrent claim loops, %d..%d (default %d)
  RELAY_BATCH_SIZE     rows per claim, %d..%d (default: system config
                       relay.delivery.batch_size, re-read every 30s;
                       setting it pins the value; %d)
  RELAY_LEASE_TTL      lease length, %s..%s (default: relay.delivery.lease_ttl_seconds; %s)
  RELAY_POLL_INTERVAL  idle poll when no NOTIFY arrives, %s..%s (default %s); every
                       %s while the LISTEN connection is deaf (DATABASE_DIRECT_URL)
  RELAY_MAX_ATTEMPTS   delivery attempts before an event fails, %d..%d; a lease lost
                       with a dead relay counts as one (default: relay.delivery.max_attempts; %d)
  RELAY_RECONCILE      follow every delivered event until a consumer records it, and publish
                       again those whose task the queue lost (Redis restart, failover, flush,
                       eviction): true|false (default true)
  RELAY_RECONCILE_INTERVAL  the reconciler's safety-net period, 1s..1h (default 30s); a sign of
                       loss (RELAY_LOSS_CHECK_INTERVAL) starts a pass at once
  RELAY_RECONCILE_GRACE  the scan for new deliveries stays this far behind now, 100ms..10m
                       (default 30s: relays stamp delivered_at before their commit)
  RELAY_RECONCILE_HORIZON  how far back a starting relay looks for unconsumed deliveries,
                       1m..720h (default 24h, the queue's retention)
  RELAY_LOSS_CHECK_INTERVAL  how often the queue's Redis is checked for signs of loss
                       (run_id, replication id, evictions, a canary key), 100ms..1m (default 1s)
  OUTBOX_RETENTION     keep delivered events this long, then delete (default 0 = off; >= 1h,
                       and no shorter than a task's retries: 13h21m with the WORKER_* defaults);
                       an event no consumer recorded is kept
  TASK_RECOVERY_INTERVAL  pause between task-recovery passes, %s..%s (default %s): tasks
                       whose lease expired go back to pending and are delivered again
  PERIODIC_ENABLED     run the domains' periodic commands in this process: true|false (default
                       true; every relay may, each occurrence is committed once)
  PERIODIC_INTERVAL    pause between passes over the domains' periodic commands, %s..%s
                       (default %s): how late after its time an occurrence is committed
  IDEMPOTENCY_RETENTION   keep idempotency records (key, stored response) this long,
                       %s..%s (default %s = 7 days); the business row stays
  ASYNQ_QUEUE          queue for outbox envelopes, also for outbox replay (default "default")
  RELAY_QUEUE_DURABILITY_CHECK  read the queue Redis' durability settings (eviction policy,
                       AOF, RDB, role) at start and then this often, 10s..24h (default 5m);
                       a WARN and asynq_queue_redis_durability_risk when it can lose tasks
  WORKER_CONCURRENCY   Asynq worker goroutines, 1..1000 (default 10)
  WORKER_MAX_RETRY     how often a failing (or crashing) consumer's task is retried before the
                       queue archives it and the failure is recorded, 1..100 (default 25)
  WORKER_ENABLED       run the Asynq worker in this process: true|false (default true)
  WORKER_RETRY_BASE    a failed consumer's first retry after about this long, doubling
                       (default 1s, jittered x0.5..x1.5)
  WORKER_RETRY_MAX     the longest wait between consumer retries (default 1m)
  WORKER_TASK_CHECK_INTERVAL  an idle worker looks at its empty queue again after about
                       this long when nothing wakes it (default 1s, 10ms..10s); this
                       process's relay wakes it as it enqueues, so its events start at once
  SHUTDOWN_DRAIN_DELAY on SIGTERM the admin /readyz answers 503 for this long while
                       the relay and worker keep working (default 0s: the relay has
                       no Service to drain; 0s..1m)
  SHUTDOWN_TIMEOUT     then the in-flight batches (all together) and the worker's
                       in-flight tasks get this long (default 15s, 1s..5m)
  OTEL_EXPORTER_OTLP_ENDPOINT  OpenTelemetry collector, OTLP over HTTP (e.g.
                       http://localhost:4318); tracing is off unless it (or
                       OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set
  OTEL_SERVICE_NAME    service.name of the spans (default relay); OTEL_TRACES_SAMPLER,
                       OTEL_RESOURCE_ATTRIBUTES, OTEL_SDK_DISABLED and the other
                       standard OTEL_* variables apply too
`, postgres.DefaultFallbackPoll,
	relay.MinLoops, relay.MaxLoops, relay.DefaultLoops,
	relay.MinBatchSize, relay.MaxBatchSize, relay.DefaultBatchSize,
	relay.MinLeaseFor, relay.MaxLeaseFor, relay.DefaultLeaseFor,
	relay.MinPollInterval, relay.MaxPollInterval, relay.DefaultPollInterval, postgres.DefaultFallbackPoll,
	relay.MinMaxAttempts, relay.MaxMaxAttempts, relay.DefaultMaxAttempts,
	sweep.MinTaskRecoveryEvery, sweep.MaxTaskRecoveryEvery, sweep.DefaultTaskRecoveryEvery,
	periodic.MinRunnerEvery, periodic.MaxRunnerEvery, periodic.DefaultRunnerEvery,
	sweep.MinIdempotencyRetention, sweep.MaxIdempotencyRetention, sweep.DefaultIdempotencyRetention)

// config is the relay's environment. Zero BatchSize, LeaseTTL and
// MaxAttempts mean "not pinned": the registered system-config key decides.
type config struct {
	DatabaseURL       string
	DirectURL         string
	RedisURL          string
	LogLevel          slog.Level
	AdminAddr         string
	AdminPprof        bool
	Owner             string
	Loops             int
	BatchSize         int
	LeaseTTL          time.Duration
	PollInterval      time.Duration
	MaxAttempts       int
	Reconcile         bool
	ReconcileEvery    time.Duration
	ReconcileGrace    time.Duration
	ReconcileHorizon  time.Duration
	LossCheckEvery    time.Duration
	Retention         time.Duration
	TaskRecoveryEvery time.Duration
	PeriodicEnabled   bool
	PeriodicEvery     time.Duration
	IdemRetention     time.Duration
	Queue             string
	WorkerConcurrency int
	WorkerMaxRetry    int
	WorkerEnabled     bool
	WorkerRetryBase   time.Duration
	WorkerTaskCheck   time.Duration
	WorkerRetryMax    time.Duration
	DrainDelay        time.Duration
	ShutdownTimeout   time.Duration
	// QueueDurabilityEvery is how often the queue Redis' durability
	// settings are read (durabilityOption).
	QueueDurabilityEvery time.Duration
	// TuningRefresh overrides the package's TuningRefresh; tests only.
	TuningRefresh time.Duration
	// Tracing reads the OTEL_* variables; tests set its Exporter.
	Tracing tracing.Config
	// DomainEnv are the domains' own variables (domain.Domain.RelayEnv).
	DomainEnv domain.Settings
}

func loadConfig(getenv func(string) string) (config, error) {
	return loadConfigOf(appDomains, getenv)
}

// loadConfigOf is loadConfig for the domains ds, whose own variables it
// reads with the relay's.
func loadConfigOf(ds []domain.Domain, getenv func(string) string) (config, error) {
	r := envconf.New(getenv)
	host, _ := os.Hostname()
	c := config{
		DatabaseURL:       r.PostgresURL("DATABASE_URL"),
		DirectURL:         r.OptionalPostgresURL("DATABASE_DIRECT_URL", ""),
		RedisURL:          r.RedisURL("REDIS_URL"),
		LogLevel:          r.LogLevel("LOG_LEVEL"),
		AdminAddr:         r.AdminAddr(9090),
		AdminPprof:        r.Bool("ADMIN_PPROF", false),
		Owner:             r.String("RELAY_OWNER", fmt.Sprintf("relay-%s-%d", host, os.Getpid())),
		Loops:             r.Int("RELAY_LOOPS", relay.DefaultLoops, relay.MinLoops, relay.MaxLoops),
		BatchSize:         r.Int("RELAY_BATCH_SIZE", 0, relay.MinBatchSize, relay.MaxBatchSize),
		LeaseTTL:          r.Duration("RELAY_LEASE_TTL", 0, relay.MinLeaseFor, relay.MaxLeaseFor),
		PollInterval:      r.Duration("RELAY_POLL_INTERVAL", relay.DefaultPollInterval, relay.MinPollInterval, relay.MaxPollInterval),
		MaxAttempts:       r.Int("RELAY_MAX_ATTEMPTS", 0, relay.MinMaxAttempts, relay.MaxMaxAttempts),
		Reconcile:         r.Bool("RELAY_RECONCILE", true),
		ReconcileEvery:    r.Duration("RELAY_RECONCILE_INTERVAL", relay.DefaultReconcileEvery, time.Second, time.Hour),
		ReconcileGrace:    r.Duration("RELAY_RECONCILE_GRACE", relay.DefaultReconcileGrace, 100*time.Millisecond, 10*time.Minute),
		ReconcileHorizon:  r.Duration("RELAY_RECONCILE_HORIZON", relay.DefaultReconcileHorizon, time.Minute, 720*time.Hour),
		LossCheckEvery:    r.Duration("RELAY_LOSS_CHECK_INTERVAL", queue.DefaultLossCheckEvery, 100*time.Millisecond, time.Minute),
		Queue:             r.String("ASYNQ_QUEUE", "default"),
		WorkerConcurrency: r.Int("WORKER_CONCURRENCY", 10, 1, 1000),
		WorkerMaxRetry:    r.Int("WORKER_MAX_RETRY", queue.DefaultMaxRetry, 1, 100),
		WorkerEnabled:     r.Bool("WORKER_ENABLED", true),
		WorkerRetryBase:   r.Duration("WORKER_RETRY_BASE", time.Second, 10*time.Millisecond, time.Hour),
		WorkerTaskCheck:   r.Duration("WORKER_TASK_CHECK_INTERVAL", time.Second, 10*time.Millisecond, 10*time.Second),
		WorkerRetryMax:    r.Duration("WORKER_RETRY_MAX", time.Minute, 10*time.Millisecond, 24*time.Hour),
		TaskRecoveryEvery: r.Duration("TASK_RECOVERY_INTERVAL", sweep.DefaultTaskRecoveryEvery,
			sweep.MinTaskRecoveryEvery, sweep.MaxTaskRecoveryEvery),
		PeriodicEnabled: r.Bool("PERIODIC_ENABLED", true),
		PeriodicEvery: r.Duration("PERIODIC_INTERVAL", periodic.DefaultRunnerEvery,
			periodic.MinRunnerEvery, periodic.MaxRunnerEvery),
		IdemRetention: r.Duration("IDEMPOTENCY_RETENTION", sweep.DefaultIdempotencyRetention,
			sweep.MinIdempotencyRetention, sweep.MaxIdempotencyRetention),
		DrainDelay:      r.Duration("SHUTDOWN_DRAIN_DELAY", 0, 0, time.Minute),
		ShutdownTimeout: r.Duration("SHUTDOWN_TIMEOUT", 15*time.Second, time.Second, 5*time.Minute),
	}
	c.QueueDurabilityEvery = r.Duration("RELAY_QUEUE_DURABILITY_CHECK", DefaultQueueDurabilityEvery, queue.MinDurabilityWatchEvery, queue.MaxDurabilityWatchEvery)
	c.Tracing = tracing.Config{Service: tracing.Service{Name: "relay", Instance: c.Owner}, Getenv: getenv}
	c.DomainEnv = domain.LoadEnv(ds, domain.SideRelay, r)
	if s := r.String("OUTBOX_RETENTION", "0"); s != "0" {
		c.Retention = r.Duration("OUTBOX_RETENTION", 0, relay.MinRetentionWindow, relay.MaxRetentionWindow)
	}
	return c, errors.Join(r.Err(), c.checkRetention())
}

// checkRetention refuses a retention shorter than a consumer task's retry
// span: retention deletes the consumption records consumers check as their
// idempotency key, so a task retried after that would apply its effect
// again. The worker settings are the fleet's (every relay reads the same).
func (c config) checkRetention() error {
	if c.Retention == 0 {
		return nil
	}
	span := queue.RetrySpan(c.WorkerMaxRetry, c.WorkerRetryBase, c.WorkerRetryMax, 0)
	if c.Retention >= span {
		return nil
	}
	need := span.Truncate(time.Minute) + time.Minute
	return fmt.Errorf("OUTBOX_RETENTION %s is shorter than a consumer task can keep retrying, up to %s "+
		"(WORKER_MAX_RETRY %d retries, up to WORKER_RETRY_MAX %s apart, each attempt up to %s): "+
		"a retry after its event was deleted finds no consumption record and applies its effect again; "+
		"set OUTBOX_RETENTION to at least %s, or lower WORKER_MAX_RETRY or WORKER_RETRY_MAX",
		c.Retention, need, c.WorkerMaxRetry, c.WorkerRetryMax, queue.DefaultTaskTimeout, need)
}
