package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/july/template/adapters/tracing"
	"github.com/july/template/core/outbox"
)

// benchTracerProvider is the apps' tracing with every span sampled and
// exported in batches, as with OTEL_TRACES_SAMPLER=always_on, except that
// the exporter drops the spans instead of sending them to a collector: the
// figures are the relay's own cost, not the network's.
func benchTracerProvider() *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(tracing.Redacting(discardExporter{})),
	)
}

type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// withTraceParents gives each event a random sampled W3C context, as
// pgoutbox.Append stores under a traced request.
func withTraceParents(evs []outbox.Event) {
	b := make([]byte, 24)
	for i := range evs {
		_, _ = rand.Read(b)
		evs[i].TraceParent = "00-" + hex.EncodeToString(b[:16]) + "-" + hex.EncodeToString(b[16:]) + "-01"
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
