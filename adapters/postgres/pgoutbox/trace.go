package pgoutbox

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/july/template/core/outbox"
)

// tracerName is the instrumentation scope of the outbox spans.
const tracerName = "github.com/july/template/adapters/postgres/pgoutbox"

// traceContext is a W3C trace context as stored in trace_parent and
// trace_state.
type traceContext struct{ parent, state string }

// traceAppend starts "outbox.append" under the span ctx carries, using
// that span's own provider, and returns the new span's trace context. With
// no span in ctx (tracing off, a tool, a test) it does nothing, so an
// untraced append costs one context lookup.
func traceAppend(ctx context.Context, events []outbox.Event) (context.Context, traceContext, func(error)) {
	parent := trace.SpanFromContext(ctx)
	if !parent.SpanContext().IsValid() {
		return ctx, traceContext{}, func(error) {}
	}
	// The messaging conventions' "create" span: the message is created
	// here, for the queue the relay later sends it to (its send span
	// links back to this one).
	attrs := []attribute.KeyValue{semconv.MessagingSystemKey.String("asynq"), semconv.MessagingOperationTypeCreate,
		semconv.MessagingOperationName("append"), attribute.Int("july.outbox.event_count", len(events))}
	if len(events) == 1 {
		attrs = append(attrs, semconv.MessagingMessageID(events[0].EventID))
		attrs = append(attrs, eventAttrs(&events[0])...)
	} else {
		attrs = append(attrs, semconv.MessagingBatchMessageCount(len(events)))
	}
	ctx, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "outbox.append",
		trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	if len(events) > 1 {
		for i := range events {
			span.AddEvent("july.outbox.event", trace.WithAttributes(eventAttrs(&events[i])...))
		}
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return ctx, traceContext{parent: carrier["traceparent"], state: carrier["tracestate"]}, func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, "outbox append failed")
		}
		span.End()
	}
}

// eventAttrs are the ids of ev: never its payload.
func eventAttrs(ev *outbox.Event) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("july.outbox.event_id", ev.EventID),
		attribute.String("july.outbox.event_type", ev.EventType),
		attribute.String("july.request_id", ev.RequestID),
		attribute.String("july.correlation_id", ev.CorrelationID),
	}
}
