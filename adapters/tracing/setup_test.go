package tracing_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/july/template/adapters/tracing"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// With no OTEL_* variable (a developer's machine), or with only some that
// name no endpoint, tracing stays off: no exporter, a no-op provider whose
// spans record nothing, and OpenTelemetry's globals untouched.
func TestNoOTELVariablesStartsNothing(t *testing.T) {
	before := otel.GetTracerProvider()
	for name, vars := range map[string]map[string]string{
		"none":                 {},
		"service name only":    {"OTEL_SERVICE_NAME": "svc", "OTEL_TRACES_SAMPLER": "always_on"},
		"sdk disabled":         {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
		"traces exporter none": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"},
	} {
		t.Run(name, func(t *testing.T) {
			require.False(t, tracing.Enabled(env(vars)))
			p, err := tracing.New(t.Context(), tracing.Config{Getenv: env(vars)})
			require.NoError(t, err)
			require.False(t, p.Enabled())
			require.IsType(t, noop.TracerProvider{}, p.TracerProvider, "no SDK, so no exporter and no processor")
			_, span := p.Tracer("t").Start(t.Context(), "x")
			require.False(t, span.IsRecording(), "no span is recorded")
			require.False(t, span.SpanContext().IsValid(), "and none is propagated")
			span.End()
			require.NoError(t, p.Shutdown(t.Context()))
		})
	}
	require.Same(t, before, otel.GetTracerProvider(), "the global provider is not replaced while tracing is off")
}

func TestEndpointTurnsTracingOn(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		require.True(t, tracing.Enabled(env(map[string]string{k: "http://127.0.0.1:4318"})), k)
	}
	_, err := tracing.New(t.Context(), tracing.Config{Getenv: env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})})
	require.ErrorContains(t, err, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported")
}

// The resource names the service, its version and instance; spans pass
// the redactor on their way out.
func TestResourceAndRedaction(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	p, err := tracing.New(t.Context(), tracing.Config{Service: tracing.Service{Name: "api", Version: "v1.2.3", Instance: "api-7"}, Exporter: exp})
	require.NoError(t, err)
	require.True(t, p.Enabled())
	_, span := p.Tracer("t").Start(context.Background(), "x")
	span.SetAttributes(
		attribute.String("password", "hunter2"),
		attribute.String("note", "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"),
		attribute.String("event_id", "0b7e6f2a-5c1d-4e8f-9a3b-2c4d6e8f0a1b"),
		attribute.Int("retries", 3),
	)
	span.AddEvent("e", trace2Attrs(attribute.String("api_key", "k-123")))
	span.End()
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) }) // the in-memory exporter forgets its spans on shutdown

	spans := exp.GetSpans()
	require.Len(t, spans, 1)
	got := map[string]string{}
	for _, a := range spans[0].Attributes {
		got[string(a.Key)] = a.Value.String()
	}
	require.Equal(t, "[REDACTED]", got["password"])
	require.NotContains(t, got["note"], "eyJ")
	require.Equal(t, "0b7e6f2a-5c1d-4e8f-9a3b-2c4d6e8f0a1b", got["event_id"], "ids pass unchanged")
	require.Equal(t, "3", got["retries"])
	require.Equal(t, "[REDACTED]", spans[0].Events[0].Attributes[0].Value.String())

	res := map[string]string{}
	for _, a := range spans[0].Resource.Attributes() {
		res[string(a.Key)] = a.Value.String()
	}
	require.Equal(t, "api", res["service.name"])
	require.Equal(t, "v1.2.3", res["service.version"])
	require.Equal(t, "api-7", res["service.instance.id"])
}

func trace2Attrs(kv ...attribute.KeyValue) trace.SpanStartEventOption {
	return trace.WithAttributes(kv...)
}
