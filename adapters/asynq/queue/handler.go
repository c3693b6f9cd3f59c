package queue

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hibiken/asynq"

	"github.com/july/template/core/outbox"
)

// Handle returns an asynq.Handler that decodes the envelope's payload into a
// T (via Envelope.Decode) and calls fn. It reads the envelope stored by
// EnvelopeMiddleware, or decodes the task itself when registered without it.
//
// A payload that does not decode into T is archived without retries and fn
// is not called. An error from fn that outbox.Classify reports permanent
// (e.g. outbox.Permanent) also stops the retries; other errors are retried
// by asynq with backoff.
func Handle[T any](fn func(ctx context.Context, env outbox.Envelope, payload T) error) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		env, ok := EnvelopeFrom(ctx)
		if !ok {
			var err error
			if env, err = outbox.DecodeEnvelope(task.Payload()); err != nil {
				return noRetry(fmt.Errorf("asynq queue: %s task: %s", task.Type(), decodeReason(err)))
			}
		}
		var payload T
		if err := env.Decode(&payload); err != nil {
			return noRetry(fmt.Errorf("asynq queue: event %s: payload does not decode into %T", env.EventID, payload))
		}
		return classified(fn(ctx, env, payload))
	})
}

// HandleTask returns an asynq.Handler for tasks enqueued with EnqueueTask
// (bare payloads, no envelope): it unmarshals the payload into a T and
// calls fn, with the same retry rules as Handle.
func HandleTask[T any](fn func(ctx context.Context, payload T) error) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		var payload T
		if err := json.Unmarshal(task.Payload(), &payload); err != nil {
			return noRetry(fmt.Errorf("asynq queue: %s task: payload does not decode into %T", task.Type(), payload))
		}
		return classified(fn(ctx, payload))
	})
}

// classified maps a permanent handler error to asynq's no-retry signal.
func classified(err error) error {
	if err != nil && outbox.Classify(err) == outbox.ClassPermanent {
		return noRetry(err)
	}
	return err
}

// noRetry is the one place asynq.SkipRetry is attached: asynq archives the
// task instead of retrying it.
func noRetry(err error) error { return fmt.Errorf("%w: %w", err, asynq.SkipRetry) }
