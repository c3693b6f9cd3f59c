package tracing_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/july/template/adapters/tracing"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
)

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

type nopPublisher struct{}

func (nopPublisher) Publish(_ context.Context, envs []outbox.Envelope) []error {
	return make([]error, len(envs))
}

// BenchmarkRelayBatchTracing is the relay's tracing cost for one batch of
// 500 traced events (batch span with 500 links, claim and publish spans,
// exported in batches through the redactor), without the database and the
// queue: divide by 500 for the cost per event. docs/performance.md records
// it.
func BenchmarkRelayBatchTracing(b *testing.B) {
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(tracing.Redacting(discard{})))
	b.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	tr, pub := tracing.NewRelay(sdk), tracing.Publisher(nopPublisher{}, sdk)
	events := make([]outbox.Event, 500)
	envs := make([]outbox.Envelope, len(events))
	for i := range events {
		events[i] = outbox.Event{EventID: "0b7e6f2a-5c1d-4e8f-9a3b-" + strconv.Itoa(100000000000+i), EventType: "order.placed",
			RequestID: "req-1", CorrelationID: "corr-1", TraceParent: "00-4bf92f3577b34da6a50f33bcbfe0c9a9-00f067aa0ba902b7-01"}
		envs[i] = events[i].Envelope()
	}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		ctx, end := tr.StartBatch(context.Background(), relay.ClaimedBatch{Owner: "o", ClaimStart: now, ClaimEnd: now, Events: events})
		pub.Publish(ctx, envs)
		end(relay.BatchResult{Delivered: len(events)}, nil)
	}
}

var _ ports.Publisher = nopPublisher{}
