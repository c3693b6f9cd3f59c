package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"github.com/hibiken/asynq"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/redaction"
)

// DeadLetterFunc is told about a task asynq is about to archive: its
// retries ran out, or its handler returned a permanent error (one wrapping
// asynq.SkipRetry). asynq.GetTaskID(ctx) is the task id; for an outbox
// envelope that is the event_id. task carries the type and payload but no
// ResultWriter. err is the handler's raw error: redact it before storing.
//
// It runs on the worker goroutine before the task is archived, and ctx may
// already be cancelled (a handler timeout), so it should finish in
// milliseconds under its own short timeout. A panic is recovered and logged.
type DeadLetterFunc func(ctx context.Context, task *asynq.Task, err error)

// ServerConfig tunes the worker server.
type ServerConfig struct {
	// Queues maps queue names to priorities. Nil processes only
	// DefaultQueue.
	Queues map[string]int
	// Concurrency is the number of tasks processed at once. Zero means the
	// number of usable CPUs (asynq's default).
	Concurrency int
	// Logger receives asynq's own logs and failed-task lines. Nil means
	// slog.Default().
	Logger *slog.Logger
	// ShutdownTimeout is how long Shutdown waits for running tasks before
	// handing them back to Redis. Zero means asynq's default (8s).
	ShutdownTimeout time.Duration
	// DeadLetterFunc, when set, is called once for each task that fails
	// for good; see DeadLetterFunc. Nil only logs.
	DeadLetterFunc DeadLetterFunc
	// RetryDelayFunc is the delay before a failed task's next attempt.
	// Nil means RetryBackoff(RetryBase, RetryMax).
	RetryDelayFunc asynq.RetryDelayFunc
	// RetryBase and RetryMax shape the default backoff: the first retry
	// comes after about RetryBase, each next one twice as late, never
	// later than RetryMax. Defaults: DefaultRetryBase, DefaultRetryMax.
	RetryBase, RetryMax time.Duration
	// TaskCheckInterval is how long an idle worker waits (jittered
	// x0.5..x1.5) before it looks at empty queues again when nothing
	// wakes it (Wake). Zero means 1 s, asynq's default: an idle worker
	// then sends about one small dequeue script a second per queue. A
	// task a Publisher sharing the Wake enqueued starts at once whatever
	// this is; tasks from other processes, and retries and scheduled
	// tasks asynq moves to the queue, wait for the check.
	TaskCheckInterval time.Duration
	// Wake, when set, is how this process's Publisher (Config.Wake)
	// tells the worker there is work; see Wake. Nil: the worker only
	// checks every TaskCheckInterval. Close it before Shutdown.
	Wake *Wake
}

// Consumer retry defaults: short first retries (asynq's own default waits
// 15-45 s before the first), capped, with jitter.
const (
	DefaultRetryBase = time.Second
	DefaultRetryMax  = time.Minute
)

// RetryBackoff returns the delay base*2^n for the n-th retry, with jitter
// (x0.5..x1.5) so retries of a burst spread out, capped at max.
func RetryBackoff(base, max time.Duration) asynq.RetryDelayFunc {
	return func(n int, _ error, _ *asynq.Task) time.Duration {
		return min(time.Duration(float64(backoff(n, base, max))*(jitterMax-1+rand.Float64())), max)
	}
}

// jitterMax is RetryBackoff's largest jitter factor (it draws x0.5..x1.5).
const jitterMax = 1.5

// backoff is the n-th retry's wait before jitter: base doubled n times,
// no longer once it reaches max.
func backoff(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	return d
}

// DefaultTaskTimeout bounds an attempt of a task published with no
// Timeout or Deadline (asynq's own default).
const DefaultTaskTimeout = 30 * time.Minute

// RetrySpan is the longest a task can keep running after its first attempt
// starts: maxRetry+1 attempts of up to timeout each (zero: asynq's default,
// 30 min) and the longest RetryBackoff(base, max) wait between each. A
// record a consumer keeps as its idempotency key must outlive it.
func RetrySpan(maxRetry int, base, max, timeout time.Duration) time.Duration {
	if timeout <= 0 {
		timeout = DefaultTaskTimeout
	}
	span := time.Duration(maxRetry+1) * timeout
	for n := range maxRetry {
		span += min(time.Duration(float64(backoff(n, base, max))*jitterMax), max)
	}
	return span
}

// NewServer returns an asynq worker server; run it with
// srv.Start(mux) and stop it with srv.Shutdown(). Failed tasks are logged
// at WARN with task_id, task_type, queue, retry counts and the redacted
// error; tasks failed for good are then passed to cfg.DeadLetterFunc.
// Redis health check failures are logged at WARN without the Redis address.
// An idle worker waits for cfg.Wake or cfg.TaskCheckInterval; see Wake.
func NewServer(redisOpt asynq.RedisConnOpt, cfg ServerConfig) *asynq.Server {
	srv, _ := newServer(redisOpt, cfg)
	return srv
}

func newServer(redisOpt asynq.RedisConnOpt, cfg ServerConfig) (*asynq.Server, *idleHook) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	queues := cfg.Queues
	if len(queues) == 0 {
		queues = map[string]int{DefaultQueue: 1}
	}
	wake := cfg.Wake
	if wake == nil {
		wake = NewWake()
	}
	hook := &idleHook{wake: wake, check: cmp.Or(cfg.TaskCheckInterval, time.Second)}
	srv := asynq.NewServer(hookedConnOpt{redisOpt, hook}, asynq.Config{
		Concurrency:       cfg.Concurrency,
		Queues:            queues,
		ShutdownTimeout:   cfg.ShutdownTimeout,
		Logger:            slogLogger{logger},
		RetryDelayFunc:    retryDelay(cfg),
		TaskCheckInterval: asynqIdleSleep, // the idle wait is the hook's
		ErrorHandler:      errorHandler(logger, cfg.DeadLetterFunc),
		HealthCheckFunc: func(err error) {
			if err != nil {
				logger.Warn("asynq queue: redis health check failed", slog.String("error", reasonOf(err)))
			}
		},
	})
	return srv, hook
}

func retryDelay(cfg ServerConfig) asynq.RetryDelayFunc {
	if cfg.RetryDelayFunc != nil {
		return cfg.RetryDelayFunc
	}
	return RetryBackoff(cmp.Or(cfg.RetryBase, DefaultRetryBase), cmp.Or(cfg.RetryMax, DefaultRetryMax))
}

// errorHandler logs every failed attempt and hands final failures to
// deadLetter. Handler errors may quote request data, so they are redacted.
func errorHandler(logger *slog.Logger, deadLetter DeadLetterFunc) asynq.ErrorHandlerFunc {
	red := &redaction.Redactor{}
	return func(ctx context.Context, task *asynq.Task, err error) {
		id, _ := asynq.GetTaskID(ctx)
		q, _ := asynq.GetQueueName(ctx)
		retried, _ := asynq.GetRetryCount(ctx)
		maxRetry, _ := asynq.GetMaxRetry(ctx)
		final := finalFailure(err, retried, maxRetry)
		logger.WarnContext(ctx, "asynq queue: task failed",
			slog.String("task_id", id), slog.String("task_type", task.Type()), slog.String("queue", q),
			slog.Int("retried", retried), slog.Int("max_retry", maxRetry), slog.Bool("final", final),
			slog.String("error", outbox.SafeMessage(red.RedactText(err.Error()))))
		if final && deadLetter != nil {
			callDeadLetter(ctx, logger, deadLetter, task, err, id)
		}
	}
}

// finalFailure mirrors asynq's own choice in handleFailedMessage: a revoked
// task is dropped, not archived; SkipRetry or exhausted retries archive it.
func finalFailure(err error, retried, maxRetry int) bool {
	if errors.Is(err, asynq.RevokeTask) {
		return false
	}
	return errors.Is(err, asynq.SkipRetry) || retried >= maxRetry
}

// callDeadLetter keeps a panicking DeadLetterFunc from killing the worker.
func callDeadLetter(ctx context.Context, logger *slog.Logger, fn DeadLetterFunc, task *asynq.Task, err error, id string) {
	defer func() {
		if r := recover(); r != nil {
			logger.ErrorContext(ctx, "asynq queue: dead-letter func panicked; the failure is only in asynq's archive",
				slog.String("task_id", id), slog.String("task_type", task.Type()), slog.String("panic", fmt.Sprint(r)))
		}
	}()
	fn(ctx, task, err)
}

// slogLogger adapts slog to asynq.Logger.
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Debug(args ...any) { s.l.Debug(fmt.Sprint(args...)) }
func (s slogLogger) Info(args ...any)  { s.l.Info(fmt.Sprint(args...)) }
func (s slogLogger) Warn(args ...any)  { s.l.Warn(fmt.Sprint(args...)) }
func (s slogLogger) Error(args ...any) { s.l.Error(fmt.Sprint(args...)) }

// Fatal honours asynq.Logger's contract (log, then exit 1); asynq itself
// does not call it.
func (s slogLogger) Fatal(args ...any) {
	s.l.Error(fmt.Sprint(args...))
	os.Exit(1)
}
