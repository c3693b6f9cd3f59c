package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hibiken/asynq"

	"github.com/july/template/core/outbox"
)

// EnvelopeMiddleware decodes each task's payload as an outbox envelope
// (outbox.DecodeEnvelope) before the handler runs, and stores the envelope
// and an enriched logger in the context (EnvelopeFrom, LoggerFrom).
//
// A payload that is not a valid envelope, e.g. one marshalled twice into a
// JSON string, will never decode: the handler is not called, a WARN line
// with the task id (never the payload) is logged to logger, and the task is
// archived without retries. A nil logger means slog.Default().
func EnvelopeMiddleware(logger *slog.Logger) asynq.MiddlewareFunc {
	if logger == nil {
		logger = slog.Default()
	}
	return func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
			env, err := outbox.DecodeEnvelope(task.Payload())
			if err != nil {
				id, _ := asynq.GetTaskID(ctx)
				q, _ := asynq.GetQueueName(ctx)
				reason := decodeReason(err)
				logger.WarnContext(ctx, "asynq queue: dropped task with malformed envelope",
					slog.String("task_id", id), slog.String("task_type", task.Type()),
					slog.String("queue", q), slog.String("reason", reason))
				return noRetry(fmt.Errorf("asynq queue: task %s: %s", id, reason))
			}
			linkProducer(ctx, env)
			return next.ProcessTask(withEnvelope(ctx, env, logger), task)
		})
	}
}

// decodeReason describes a decode failure without quoting the payload,
// which may hold personal data (ValidationError reasons quote a prefix).
func decodeReason(err error) string {
	var ve *outbox.ValidationError
	if errors.As(err, &ve) {
		if errors.Is(err, outbox.ErrPayloadNotStructured) {
			return "envelope payload is not a json object (marshalled twice?)"
		}
		return "envelope field " + ve.Field + " is invalid"
	}
	return "payload is not a json envelope object (marshalled twice?)"
}
