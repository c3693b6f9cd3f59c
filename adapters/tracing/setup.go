// Package tracing wires OpenTelemetry tracing for the apps: the SDK,
// configured by the standard OTEL_* environment variables and off unless
// an OTLP endpoint is set; an exporter wrapper that passes every attribute
// through the redactor; and the relay's spans (batch, claim, publish,
// complete, fail). The HTTP, Postgres and Asynq spans live in their own
// adapters and take the trace.TracerProvider this package provides.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Service names the process in its resource attributes.
type Service struct {
	Name     string // service.name unless OTEL_SERVICE_NAME is set, e.g. "july-api"
	Version  string // service.version; default: the module version from the build info
	Instance string // service.instance.id; default: hostname-pid
}

// Config is what an app supplies for Module.
type Config struct {
	Service Service
	// Getenv reads the OTEL_* variables that decide whether tracing is on;
	// nil means os.Getenv. (The SDK and the exporter read the rest of the
	// OTEL_* variables from the process environment themselves.)
	Getenv func(string) string
	// Exporter, when set, receives the spans synchronously instead of the
	// OTLP exporter, and tracing is on whatever the environment says: tests
	// pass a tracetest.InMemoryExporter here.
	Exporter sdktrace.SpanExporter
}

// Provider is the app's tracer provider: the SDK's when tracing is on, a
// no-op one otherwise.
type Provider struct {
	trace.TracerProvider
	sdk *sdktrace.TracerProvider
}

// Enabled reports whether spans are recorded and exported.
func (p *Provider) Enabled() bool { return p.sdk != nil }

// Shutdown flushes the spans still buffered and stops the exporter.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p.sdk == nil {
		return nil
	}
	if err := p.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: flush spans on shutdown: %w", err)
	}
	return nil
}

// Enabled reports whether the environment asks for tracing: an OTLP
// endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), OTEL_SDK_DISABLED is not "true" and
// OTEL_TRACES_EXPORTER is not "none". With none of them set, as on a
// developer's machine, nothing is started.
func Enabled(getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") ||
		strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return false
	}
	return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) != "" ||
		strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) != ""
}

// New returns the provider cfg asks for. With tracing on it builds the OTLP
// over HTTP exporter (OTEL_EXPORTER_OTLP_* variables: endpoint, headers,
// timeout, compression), the sampler (OTEL_TRACES_SAMPLER, default
// parentbased_always_on), the batch processor (OTEL_BSP_*) and the
// resource (service.name, service.version, service.instance.id, then
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME, which win), and installs
// the provider and the W3C propagator as OpenTelemetry's globals for the
// service's own code. Nothing connects to the collector before the first
// export.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if cfg.Exporter == nil && !Enabled(cfg.Getenv) {
		return &Provider{TracerProvider: noop.NewTracerProvider()}, nil
	}
	res, err := newResource(ctx, cfg.Service)
	if err != nil {
		return nil, err
	}
	var proc sdktrace.SpanProcessor
	if cfg.Exporter != nil {
		proc = sdktrace.NewSimpleSpanProcessor(Redacting(cfg.Exporter))
	} else {
		if p := cfg.getenv("OTEL_EXPORTER_OTLP_PROTOCOL"); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_PROTOCOL=%s is not supported; the apps export OTLP over HTTP: set http/protobuf (collector port 4318) or unset it", p)
		}
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("tracing: OTLP exporter from OTEL_EXPORTER_OTLP_*: %w", err)
		}
		proc = sdktrace.NewBatchSpanProcessor(Redacting(exp))
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(proc))
	if cfg.Exporter == nil {
		otel.SetTracerProvider(sdk)
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	}
	return &Provider{TracerProvider: sdk, sdk: sdk}, nil
}

func (cfg Config) getenv(k string) string {
	if cfg.Getenv == nil {
		return os.Getenv(k)
	}
	return cfg.Getenv(k)
}

func newResource(ctx context.Context, s Service) (*resource.Resource, error) {
	if s.Version == "" {
		s.Version = "devel"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			s.Version = bi.Main.Version
		}
	}
	if s.Instance == "" {
		host, _ := os.Hostname()
		s.Instance = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	attrs := []attribute.KeyValue{attribute.String("service.version", s.Version), attribute.String("service.instance.id", s.Instance)}
	if s.Name != "" {
		attrs = append(attrs, attribute.String("service.name", s.Name))
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource from OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	return res, nil
}
