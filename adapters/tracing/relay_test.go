package tracing_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/july/template/adapters/tracing"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/relay"
)

// The batch span links to each event's stored context; an empty or
// malformed one is skipped, never a failed batch.
func TestBatchSpanLinksValidProducerContexts(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	p, err := tracing.New(t.Context(), tracing.Config{Exporter: exp})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })

	now := time.Now()
	events := []outbox.Event{
		{EventID: "e-1", TraceParent: "00-4bf92f3577b34da6a50f33bcbfe0c9a9-00f067aa0ba902b7-01", TraceState: "vendor=a1"},
		{EventID: "e-2"},
		{EventID: "e-3", TraceParent: "00-4bf92f3577b34da6a50f33bcbfe0c9a9-00f067aa0ba902b7-zz"},
		{EventID: "e-4", TraceParent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01"},
		{EventID: "e-5", TraceParent: "00-4bf92f3577b34da6a50f33bcbfe0c9a9-00f067aa0ba902b7"},
	}
	_, end := tracing.NewRelay(p).StartBatch(t.Context(), relay.ClaimedBatch{Owner: "o", ClaimStart: now.Add(-time.Millisecond), ClaimEnd: now, Events: events})
	end(relay.BatchResult{Delivered: 5}, nil)

	var batch tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "outbox.relay.batch" {
			batch = s
		}
	}
	require.Len(t, batch.Links, 1, "only e-1 has a valid context")
	l := batch.Links[0]
	require.Equal(t, "4bf92f3577b34da6a50f33bcbfe0c9a9", l.SpanContext.TraceID().String())
	require.Equal(t, "00f067aa0ba902b7", l.SpanContext.SpanID().String())
	require.True(t, l.SpanContext.IsSampled())
	require.Equal(t, "vendor=a1", l.SpanContext.TraceState().String())
	require.Equal(t, "e-1", l.Attributes[0].Value.AsString())
	require.True(t, batch.StartTime.Equal(now.Add(-time.Millisecond)), "the batch starts when the claim started")
}
