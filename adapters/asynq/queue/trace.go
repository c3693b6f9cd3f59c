package queue

import (
	"context"
	"errors"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/july/template/core/outbox"
)

const tracerName = "github.com/july/template/adapters/asynq/queue"

// TraceMiddleware runs every task under a consumer span of its own trace,
// named and attributed by OpenTelemetry's messaging conventions: "process
// <queue>", with messaging.system asynq, messaging.operation.name and
// .type process, messaging.destination.name (the queue),
// messaging.message.id (the task id, an outbox event's event_id), and
// july.asynq.task_type, july.asynq.retry_count and, on failure,
// july.asynq.final and error.type (never the payload). For an outbox
// envelope, EnvelopeMiddleware then adds the event's ids and a link to the
// span that wrote the event.
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
			ctx, span := tracer.Start(ctx, spanName("process", q),
				trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(
					MessagingSystem,
					semconv.MessagingOperationName("process"),
					semconv.MessagingOperationTypeProcess,
					semconv.MessagingDestinationName(q),
					semconv.MessagingMessageID(id),
					attribute.String(AttrTaskType, task.Type()),
					attribute.Int(AttrRetryCount, retried),
				))
			defer span.End()
			err := next.ProcessTask(ctx, task)
			if err != nil {
				span.SetAttributes(attribute.Bool(AttrFinal, errors.Is(err, asynq.SkipRetry)), semconv.ErrorType(err))
				span.SetStatus(codes.Error, "task failed; see the worker's log line with this trace_id")
			}
			return err
		})
	}
}

// MessagingSystem is messaging.system on Asynq's spans: the conventions
// register no value for Asynq, and allow a custom one.
var MessagingSystem = semconv.MessagingSystemKey.String("asynq")

// The template's own attributes on a task's span (namespaced july.*).
const (
	AttrTaskType   = "july.asynq.task_type"
	AttrRetryCount = "july.asynq.retry_count"
	AttrFinal      = "july.asynq.final"
)

// spanName is "{operation} {queue}", or the operation alone without a
// queue, as the messaging conventions name spans.
func spanName(op, q string) string {
	if q == "" {
		return op
	}
	return op + " " + q
}

// linkProducer adds env's ids to the task's span and links it to the
// span that wrote the event (env.TraceParent), when both exist.
func linkProducer(ctx context.Context, env outbox.Envelope) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(
		attribute.String("july.outbox.event_id", env.EventID),
		attribute.String("july.outbox.event_type", env.EventType),
		attribute.String("july.request_id", env.RequestID),
		attribute.String("july.correlation_id", env.CorrelationID),
	)
	if sc := ProducerSpanContext(env); sc.IsValid() {
		span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("july.outbox.event_id", env.EventID)}})
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
