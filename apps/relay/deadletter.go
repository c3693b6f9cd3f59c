package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redaction"
)

// Dead-letter bounds. The hook runs on an asynq worker goroutine, so it
// gives up quickly; an unrecorded failure is still logged at ERROR.
const (
	deadLetterTimeout = 5 * time.Second
	// deadLetterPoll is how often it re-checks an event the relay has
	// enqueued but not yet marked delivered.
	deadLetterPoll = 100 * time.Millisecond
)

// consumerFailureStore is what the dead-letter hook needs from
// *postgres.OutboxStore.
type consumerFailureStore interface {
	MarkConsumerFailed(ctx context.Context, eventID, code, message string, now time.Time) (bool, error)
	Get(ctx context.Context, eventID string) (outbox.Event, error)
}

// newDeadLetterFunc returns the worker's queue.DeadLetterFunc: a task that
// failed for good in its consumer marks its outbox event (the asynq task id
// is the event_id) Failed with code CONSUMER_FAILED and the redacted error,
// so the outbox row, not asynq's trimmed archive, is the durable record an
// operator replays from. Tasks that are not outbox events change nothing.
func newDeadLetterFunc(store consumerFailureStore, clock ports.Clock, failures *prometheus.CounterVec, log *slog.Logger) queue.DeadLetterFunc {
	red := &redaction.Redactor{}
	return func(ctx context.Context, task *asynq.Task, err error) {
		eventID, _ := asynq.GetTaskID(ctx)
		eventType := task.Type() // an envelope's task type is its event_type
		msg := outbox.SafeMessage(red.RedactText(err.Error()))
		// The task's own context may already be cancelled (handler timeout).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deadLetterTimeout)
		defer cancel()
		marked, mErr := markConsumerFailed(ctx, store, clock, eventID, msg)
		attrs := []any{slog.String("event_id", eventID), slog.String("event_type", eventType), slog.String("error", msg)}
		switch {
		case mErr != nil:
			log.ErrorContext(ctx, "outbox event failed in its consumer but could not be marked failed; only asynq's archive holds it",
				append(attrs, slog.String("reason", mErr.Error()))...)
		case marked:
			failures.WithLabelValues(eventType).Inc()
			log.ErrorContext(ctx, "outbox event failed in its consumer; replay after fixing the cause",
				append(attrs, slog.String("error_code", outbox.ConsumerFailedCode))...)
		default:
			log.WarnContext(ctx, "task failed for good; no delivered outbox event has its id (a plain task, or a purged, failed or replayed event)", attrs...)
		}
	}
}

// markConsumerFailed marks eventID, waiting while the relay has enqueued
// it but not yet recorded the delivery: a consumer can fail before the
// relay's Complete commits, and that failure must not be lost.
func markConsumerFailed(ctx context.Context, store consumerFailureStore, clock ports.Clock, eventID, msg string) (bool, error) {
	for {
		ok, err := store.MarkConsumerFailed(ctx, eventID, outbox.ConsumerFailedCode, msg, clock.Now())
		if ok || err != nil {
			return ok, err
		}
		ev, err := store.Get(ctx, eventID)
		switch {
		case errors.Is(err, ports.ErrNotFound):
			return false, nil
		case err != nil:
			return false, err
		case ev.Status != outbox.Delivering:
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("event still delivering after %s: the relay has not marked it delivered", deadLetterTimeout)
		case <-time.After(deadLetterPoll):
		}
	}
}
