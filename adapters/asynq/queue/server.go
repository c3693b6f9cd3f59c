package queue

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/hibiken/asynq"
)

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
}

// NewServer returns an asynq worker server; run it with
// srv.Start(mux) and stop it with srv.Shutdown(). Failed tasks are logged
// at WARN with task_id, task_type, queue and retry counts; Redis health
// check failures at WARN without the Redis address.
func NewServer(redisOpt asynq.RedisConnOpt, cfg ServerConfig) *asynq.Server {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	queues := cfg.Queues
	if len(queues) == 0 {
		queues = map[string]int{DefaultQueue: 1}
	}
	return asynq.NewServer(redisOpt, asynq.Config{
		Concurrency:     cfg.Concurrency,
		Queues:          queues,
		ShutdownTimeout: cfg.ShutdownTimeout,
		Logger:          slogLogger{logger},
		ErrorHandler: asynq.ErrorHandlerFunc(func(ctx context.Context, task *asynq.Task, err error) {
			id, _ := asynq.GetTaskID(ctx)
			q, _ := asynq.GetQueueName(ctx)
			retried, _ := asynq.GetRetryCount(ctx)
			maxRetry, _ := asynq.GetMaxRetry(ctx)
			logger.WarnContext(ctx, "asynq queue: task failed",
				slog.String("task_id", id), slog.String("task_type", task.Type()), slog.String("queue", q),
				slog.Int("retried", retried), slog.Int("max_retry", maxRetry), slog.String("error", err.Error()))
		}),
		HealthCheckFunc: func(err error) {
			if err != nil {
				logger.Warn("asynq queue: redis health check failed", slog.String("reason", reasonOf(err)))
			}
		},
	})
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
