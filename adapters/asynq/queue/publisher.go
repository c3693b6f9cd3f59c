package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/july/template/core/outbox"
)

// Defaults applied by NewPublisher to zero Config fields.
const (
	DefaultQueue              = "default"
	DefaultRetention          = 24 * time.Hour
	DefaultMaxRetry           = 25
	DefaultPublishConcurrency = 16
)

// Config tunes a Publisher. Zero fields take the defaults above.
type Config struct {
	// Queue is the asynq queue tasks go to. Default "default".
	Queue string
	// Retention keeps a completed task in Redis this long, so a re-delivery
	// with the same task id (the event_id) is refused by asynq as a
	// duplicate instead of being processed again. The cost is Redis memory:
	// roughly one task (envelope plus ~200 bytes) per event delivered within
	// the window. Consumers must still be idempotent after it expires.
	// Default 24h.
	Retention time.Duration
	// MaxRetry is how often asynq retries a failing task. Default 25; to
	// disable retries for one task pass asynq.MaxRetry(0) to EnqueueTask.
	MaxRetry int
	// Timeout bounds one processing attempt. Zero keeps asynq's default (30m).
	Timeout time.Duration
	// PublishConcurrency bounds the goroutines one Publish call uses.
	// Default 16.
	PublishConcurrency int
	// Wake, when set, is signalled after every task enqueued, so the
	// worker sharing it (ServerConfig.Wake) starts the task at once
	// rather than at its next check. Module shares one.
	Wake *Wake
	// Bell, when set, is rung after tasks are enqueued, so idle workers in
	// other processes start them at once too. Module sets one.
	Bell *Bell
}

// Publisher puts queue items on an asynq queue: outbox envelopes through
// Publish (it implements ports.Publisher) and a service's own items through
// EnqueueTask, the asynq call. It is safe for concurrent use.
type Publisher struct {
	client *asynq.Client
	cfg    Config
	opts   []asynq.Option // defaults from cfg; callers' options come after
}

// NewPublisher returns a Publisher using client, which the caller owns and
// closes. It rejects negative durations and counts.
func NewPublisher(client *asynq.Client, cfg Config) (*Publisher, error) {
	if client == nil {
		return nil, errors.New("asynq queue: nil asynq client")
	}
	if cfg.Retention < 0 || cfg.MaxRetry < 0 || cfg.Timeout < 0 || cfg.PublishConcurrency < 0 {
		return nil, fmt.Errorf("asynq queue: config %+v has a negative value; use zero for the default", cfg)
	}
	if strings.TrimSpace(cfg.Queue) == "" {
		cfg.Queue = DefaultQueue
	}
	if cfg.Retention == 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.MaxRetry == 0 {
		cfg.MaxRetry = DefaultMaxRetry
	}
	if cfg.PublishConcurrency == 0 {
		cfg.PublishConcurrency = DefaultPublishConcurrency
	}
	opts := []asynq.Option{asynq.Queue(cfg.Queue), asynq.Retention(cfg.Retention), asynq.MaxRetry(cfg.MaxRetry)}
	if cfg.Timeout > 0 {
		opts = append(opts, asynq.Timeout(cfg.Timeout))
	}
	return &Publisher{client: client, cfg: cfg, opts: opts}, nil
}

// Config returns the effective configuration, defaults applied.
func (e *Publisher) Config() Config { return e.cfg }

// EnqueueTask marshals payload once and enqueues it as a taskType task on
// the configured queue; opts override the configured defaults.
//
// payload must be a struct, a non-nil pointer to a struct or a map with
// string keys. Anything else, notably []byte, json.RawMessage and string,
// is refused with a *PayloadError wrapping outbox.ErrPayloadNotStructured,
// and nothing is enqueued. A blank taskType returns ErrEmptyTaskType. When
// Redis cannot take the task it returns an *UnavailableError (wrapping
// ports.ErrUnavailable). asynq.ErrTaskIDConflict and asynq.ErrDuplicateTask
// are returned wrapped, for callers that passed asynq.TaskID or
// asynq.Unique.
func (e *Publisher) EnqueueTask(ctx context.Context, taskType string, payload any, opts ...asynq.Option) (*asynq.TaskInfo, error) {
	if strings.TrimSpace(taskType) == "" {
		return nil, ErrEmptyTaskType
	}
	b, err := outbox.MarshalPayload(payload)
	if err != nil {
		return nil, &PayloadError{TaskType: taskType, Err: err}
	}
	info, err := e.enqueue(ctx, asynq.NewTask(taskType, b), opts...)
	switch {
	case err == nil:
		return info, nil
	case isDuplicate(err):
		return nil, fmt.Errorf("asynq queue: enqueue %s: %w", taskType, err)
	}
	return nil, unavailable("enqueue "+taskType, err)
}

func (e *Publisher) enqueue(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error) {
	all := make([]asynq.Option, 0, len(e.opts)+len(opts))
	all = append(append(all, e.opts...), opts...)
	info, err := e.client.EnqueueContext(ctx, task, all...)
	if err == nil {
		e.cfg.Wake.Signal()
		e.cfg.Bell.Ring()
	}
	return info, err
}

func isDuplicate(err error) bool {
	return errors.Is(err, asynq.ErrTaskIDConflict) || errors.Is(err, asynq.ErrDuplicateTask)
}

// Destination is the queue Publish sends to: the relay's tracing names
// its "send <queue>" span after it.
func (e *Publisher) Destination() string { return e.cfg.Queue }
