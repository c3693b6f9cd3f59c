package queue

import (
	"context"
	"errors"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/july/template/core/outbox"
)

const tracerName = "github.com/july/template/adapters/asynq/queue"

// TraceMiddleware runs every task under a consumer span "process
// <task type>" of its own trace, with task_id, the queue and the retry
// count as attributes (never the payload). For an outbox envelope,
// EnvelopeMiddleware then adds the event's ids and a link to the span that
// wrote the event.
//
// A link, not a parent: the task may run seconds or days after the request
// (a backoff, an outage, an operator's replay) and more than once; as a
// child it would stretch the request's trace over all of that and make one
// request's trace grow with every redelivery. Each delivery is its own
// trace, and the link leads back to the request.
func TraceMiddleware(tp trace.TracerProvider) asynq.MiddlewareFunc {
	tracer := tp.Tracer(tracerName)
	return func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
			id, _ := asynq.GetTaskID(ctx)
			q, _ := asynq.GetQueueName(ctx)
			retried, _ := asynq.GetRetryCount(ctx)
			ctx, span := tracer.Start(ctx, "process "+task.Type(),
				trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(
					attribute.String("messaging.system", "asynq"),
					attribute.String("messaging.destination.name", q),
					attribute.String("task_id", id),
					attribute.String("task_type", task.Type()),
					attribute.Int("asynq.retry_count", retried),
				))
			defer span.End()
			err := next.ProcessTask(ctx, task)
			if err != nil {
				span.SetAttributes(attribute.Bool("asynq.final", errors.Is(err, asynq.SkipRetry)))
				span.SetStatus(codes.Error, "task failed; see the worker's log line with this trace_id")
			}
			return err
		})
	}
}

// linkProducer adds env's ids to the task's span and links it to the
// span that wrote the event (env.TraceParent), when both exist.
func linkProducer(ctx context.Context, env outbox.Envelope) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(
		attribute.String("event_id", env.EventID),
		attribute.String("event_type", env.EventType),
		attribute.String("request_id", env.RequestID),
		attribute.String("correlation_id", env.CorrelationID),
	)
	if sc := ProducerSpanContext(env); sc.IsValid() {
		span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("event_id", env.EventID)}})
	}
}

// ProducerSpanContext parses the envelope's W3C trace context; it is
// invalid when the event was written untraced or the header is malformed.
func ProducerSpanContext(env outbox.Envelope) trace.SpanContext {
	if env.TraceParent == "" {
		return trace.SpanContext{}
	}
	carrier := propagation.MapCarrier{"traceparent": env.TraceParent}
	if env.TraceState != "" {
		carrier["tracestate"] = env.TraceState
	}
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
}
