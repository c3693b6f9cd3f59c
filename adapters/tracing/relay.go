package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
)

const tracerName = "github.com/july/template/adapters/tracing"

// Relay traces the outbox relay: a root span "outbox.relay.batch" per
// claimed batch (an empty poll records nothing), linked to the span that
// wrote each event, with the children "outbox.claim", "send <queue>" (see
// Publisher), "outbox.complete" and "outbox.fail". Pass it as
// relay.Options.Tracer and wrap the relay's store and publisher with Store
// and Publisher. The template's own attributes are namespaced july.*
// (july.outbox.*, july.request_id, july.correlation_id).
type Relay struct{ tracer trace.Tracer }

// NewRelay returns the relay tracer of tp.
func NewRelay(tp trace.TracerProvider) *Relay { return &Relay{tracer: tp.Tracer(tracerName)} }

// StartBatch implements relay.BatchTracer. The batch span starts when the
// claim started; the claim span covers the claim statement.
func (r *Relay) StartBatch(ctx context.Context, b relay.ClaimedBatch) (context.Context, func(relay.BatchResult, error)) {
	links := make([]trace.Link, 0, len(b.Events))
	for i := range b.Events {
		if sc := spanContextOf(b.Events[i].TraceParent, b.Events[i].TraceState); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String(AttrEventID, b.Events[i].EventID)}})
		}
	}
	attrs := []attribute.KeyValue{attribute.String("july.outbox.owner", b.Owner), attribute.Int("july.outbox.batch_size", len(b.Events))}
	if len(b.Events) == 1 {
		attrs = append(attrs, eventAttrs(b.Events[0].EventID, b.Events[0].EventType, b.Events[0].RequestID, b.Events[0].CorrelationID)...)
	}
	ctx, span := r.tracer.Start(ctx, "outbox.relay.batch", trace.WithNewRoot(), trace.WithTimestamp(b.ClaimStart),
		trace.WithLinks(links...), trace.WithAttributes(attrs...))
	_, claim := r.tracer.Start(ctx, "outbox.claim", trace.WithTimestamp(b.ClaimStart), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.Int("july.outbox.claimed", len(b.Events))))
	claim.End(trace.WithTimestamp(b.ClaimEnd))
	return ctx, func(res relay.BatchResult, err error) {
		span.SetAttributes(attribute.Int("july.outbox.delivered", res.Delivered), attribute.Int("july.outbox.retried", res.Retried),
			attribute.Int("july.outbox.failed", res.Failed), attribute.Int("july.outbox.lost", res.Lost))
		if err != nil {
			span.SetStatus(codes.Error, "outbox batch not fully marked; see the relay's log line with this trace_id")
		}
		span.End()
	}
}

// Publisher wraps pub so each Publish call runs under a client span,
// child of the batch span and linked to each envelope's creation context, named and attributed by OpenTelemetry's
// messaging conventions: "send <queue>" (the queue from pub's
// Destination() string method; "send" alone without one), with
// messaging.system asynq, messaging.operation.name and .type send,
// messaging.destination.name, messaging.message.id (the event_id) for one
// envelope or messaging.batch.message_count for several, and one span
// event "july.outbox.publish_failed" per envelope that failed (its
// july.outbox.event_id and error.type, never the message).
func Publisher(pub ports.Publisher, tp trace.TracerProvider) ports.Publisher {
	p := &publisher{next: pub, tracer: tp.Tracer(tracerName), name: "send"}
	if d, ok := pub.(interface{ Destination() string }); ok && d.Destination() != "" {
		p.queue = d.Destination()
		p.name += " " + p.queue
	}
	return p
}

type publisher struct {
	next        ports.Publisher
	tracer      trace.Tracer
	name, queue string
}

func (p *publisher) Publish(ctx context.Context, envs []outbox.Envelope) []error {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return p.next.Publish(ctx, envs)
	}
	attrs := []attribute.KeyValue{messagingSystem, semconv.MessagingOperationName("send"), semconv.MessagingOperationTypeSend,
		attribute.Int("july.outbox.batch_size", len(envs))}
	if p.queue != "" {
		attrs = append(attrs, semconv.MessagingDestinationName(p.queue))
	}
	if len(envs) == 1 {
		attrs = append(attrs, semconv.MessagingMessageID(envs[0].EventID))
		attrs = append(attrs, eventAttrs(envs[0].EventID, envs[0].EventType, envs[0].RequestID, envs[0].CorrelationID)...)
	} else {
		attrs = append(attrs, semconv.MessagingBatchMessageCount(len(envs)))
	}
	// A CLIENT span linked to each message's creation context (outbox.append,
	// a PRODUCER span): the messaging conventions' shape for a send that is
	// separate from the messages' creation.
	var links []trace.Link
	for i := range envs {
		if sc := spanContextOf(envs[i].TraceParent, envs[i].TraceState); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String(AttrEventID, envs[i].EventID)}})
		}
	}
	ctx, span := p.tracer.Start(ctx, p.name, trace.WithSpanKind(trace.SpanKindClient), trace.WithLinks(links...), trace.WithAttributes(attrs...))
	defer span.End()
	errs := p.next.Publish(ctx, envs)
	failed := 0
	for i, err := range errs {
		if err == nil || i >= len(envs) {
			continue
		}
		failed++
		span.AddEvent("july.outbox.publish_failed", trace.WithAttributes(
			attribute.String(AttrEventID, envs[i].EventID), semconv.ErrorTypeKey.String(outbox.Classify(err).String())))
	}
	if failed > 0 {
		span.SetStatus(codes.Error, "some envelopes were not enqueued; they are retried")
	}
	return errs
}

// Store wraps the relay's store so Complete and Fail run under
// "outbox.complete" and "outbox.fail" spans, children of the batch span;
// the other methods pass through untraced.
func Store(s ports.OutboxRelayStore, tp trace.TracerProvider) ports.OutboxRelayStore {
	return &store{OutboxRelayStore: s, tracer: tp.Tracer(tracerName)}
}

type store struct {
	ports.OutboxRelayStore
	tracer trace.Tracer
}

func (s *store) Complete(ctx context.Context, owner string, now time.Time, refs []ports.LeaseRef) ([]int64, error) {
	ctx, end := s.start(ctx, "outbox.complete", len(refs))
	lost, err := s.OutboxRelayStore.Complete(ctx, owner, now, refs)
	end(len(lost), err)
	return lost, err
}

func (s *store) Fail(ctx context.Context, owner string, now time.Time, items []ports.FailItem) ([]int64, error) {
	ctx, end := s.start(ctx, "outbox.fail", len(items))
	lost, err := s.OutboxRelayStore.Fail(ctx, owner, now, items)
	end(len(lost), err)
	return lost, err
}

func (s *store) start(ctx context.Context, name string, n int) (context.Context, func(lost int, err error)) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, func(int, error) {}
	}
	ctx, span := s.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attribute.Int("july.outbox.rows", n)))
	return ctx, func(lost int, err error) {
		span.SetAttributes(attribute.Int("july.outbox.lost", lost))
		if err != nil {
			span.SetStatus(codes.Error, name+" failed; the leases expire and the events are published again")
		}
		span.End()
	}
}

// The template's own span attributes carrying an event's ids.
const (
	AttrEventID       = "july.outbox.event_id"
	AttrEventType     = "july.outbox.event_type"
	AttrRequestID     = "july.request_id"
	AttrCorrelationID = "july.correlation_id"
)

// messagingSystem is messaging.system for Asynq: the conventions register
// no value for it and allow a custom one.
var messagingSystem = semconv.MessagingSystemKey.String("asynq")

func eventAttrs(eventID, eventType, requestID, correlationID string) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String(AttrEventID, eventID),
		attribute.String(AttrEventType, eventType),
		attribute.String(AttrRequestID, requestID),
		attribute.String(AttrCorrelationID, correlationID),
	}
}

// spanContextOf parses a stored W3C trace context (version 00); invalid
// when empty or malformed. It parses by hand rather than through the
// propagator: the relay does it for every event, and the propagator's
// carrier map and context cost most of the relay's tracing time.
func spanContextOf(parent, state string) trace.SpanContext {
	if len(parent) != 55 || parent[:3] != "00-" || parent[35] != '-' || parent[52] != '-' {
		return trace.SpanContext{}
	}
	tid, err := trace.TraceIDFromHex(parent[3:35])
	if err != nil {
		return trace.SpanContext{}
	}
	sid, err := trace.SpanIDFromHex(parent[36:52])
	if err != nil {
		return trace.SpanContext{}
	}
	var flags trace.TraceFlags
	switch parent[53:] {
	case "01":
		flags = trace.FlagsSampled
	case "00":
	default:
		return trace.SpanContext{}
	}
	cfg := trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true}
	if state != "" {
		if ts, err := trace.ParseTraceState(state); err == nil {
			cfg.TraceState = ts
		}
	}
	return trace.NewSpanContext(cfg)
}
