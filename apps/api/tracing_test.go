package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/apps/internal/testdomain"
)

// clientTraceparent is a caller's W3C context (the spec's example).
const clientTraceparent = "00-4bf92f3577b34da6a50f33bcbfe0c9a9-00f067aa0ba902b7-01"

// traceParentOf returns the stored trace_parent of the request's outbox
// event ("" for NULL).
func (a *apiApp) traceParentOf(t *testing.T, requestID string) string {
	t.Helper()
	var tps []string
	require.NoError(t, a.db.Bun.NewRaw(`SELECT coalesce(trace_parent, '') FROM tb_outbox_event WHERE request_id = ?`, requestID).
		Scan(t.Context(), &tps))
	require.Len(t, tps, 1, "one outbox event for request %s", requestID)
	return tps[0]
}

// createTraced creates an order under a caller's trace context.
func (a *apiApp) createTraced(t *testing.T, key string) {
	t.Helper()
	res := a.do(t, apitest.Request{Method: http.MethodPost, Path: testdomain.RouteOrders, Token: writer(t, "agent-trace"),
		Body: tdOrder(1500, 0), Header: map[string]string{"X-Request-ID": key, "traceparent": clientTraceparent}})
	require.Equal(t, http.StatusCreated, res.Status, res.Body)
}

// With no OTEL_* variable the API records no span, even for a caller that
// sends a traceparent: the tracer provider is the no-op one, the request
// runs without tracing middleware, the outbox row stores no trace context
// and no log line carries a trace_id.
func TestNoOTELVariablesRecordNoSpan(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	require.False(t, a.tracing.Enabled())
	a.createTraced(t, "trace-off-0001")
	require.Empty(t, a.traceParentOf(t, "trace-off-0001"), "no span, so no trace context is stored")
	for _, rec := range a.logs.Lines(t) {
		require.NotContains(t, rec, "trace_id", "log line %v", rec)
	}
}

// With tracing on (the test's exporter stands in for OTLP) the apps'
// wiring continues the caller's trace, stores it with the event and puts
// trace_id and span_id on the request's log lines.
func TestTracingContinuesTheCallersTrace(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	a := startAPI(t, appOpts{tune: func(c *config) { c.Tracing.Exporter = exp }})
	require.True(t, a.tracing.Enabled())
	a.createTraced(t, "trace-on-0001")

	tp := a.traceParentOf(t, "trace-on-0001")
	require.Regexp(t, `^00-4bf92f3577b34da6a50f33bcbfe0c9a9-[0-9a-f]{16}-01$`, tp, "the event joins the caller's trace")
	var server tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "POST "+testdomain.RouteOrders {
			server = s
		}
	}
	require.Equal(t, "00f067aa0ba902b7", server.Parent.SpanID().String(), "the server span's parent is the caller's span")
	require.Equal(t, "4bf92f3577b34da6a50f33bcbfe0c9a9", server.SpanContext.TraceID().String())

	access := a.logs.Records(t, "access")
	require.NotEmpty(t, access, "logs:\n%s", a.logs.String())
	last := access[len(access)-1]
	require.Equal(t, "4bf92f3577b34da6a50f33bcbfe0c9a9", last["trace_id"], "access log line %v", last)
	require.Equal(t, server.SpanContext.SpanID().String(), last["span_id"])
}
