package apiserver_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/july/template/adapters/http/apiserver"
	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/tracing"
)

type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkAccessPathTracing measures one authenticated JSON request
// through the whole server stack (request id, tracing, metrics, access
// log, limits, auth, a handler that opens a child span like a query would)
// with tracing off (no middleware, the apps' default) and on with every
// span sampled and exported in batches to a discarding exporter.
// docs/performance.md records the numbers.
func BenchmarkAccessPathTracing(b *testing.B) {
	tok, err := auth.IssueToken(benchSecret, "bench-user", nil, time.Hour, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"amount_cents":1500,"channel":"wechat"}`)
	for _, on := range []bool{false, true} {
		p := apiserver.Params{Logger: slog.New(slog.DiscardHandler), JWTSecret: benchSecret}
		if on {
			sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
				sdktrace.WithBatcher(tracing.Redacting(discardSpans{})))
			b.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
			p.TracerProvider = sdk
		}
		srv, err := apiserver.New(p)
		if err != nil {
			b.Fatal(err)
		}
		srv.API.POST("/things", func(c echo.Context) error {
			_, span := trace.SpanFromContext(c.Request().Context()).TracerProvider().Tracer("bench").Start(c.Request().Context(), "INSERT tb_outbox_event")
			span.End()
			return c.JSON(http.StatusCreated, map[string]string{"id": "t-1"})
		})
		b.Run(fmt.Sprintf("tracing=%v", map[bool]string{false: "off", true: "on"}[on]), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, "/api/v1/things", bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Authorization", "Bearer "+tok)
				r.Header.Set("traceparent", "00-4bf92f3577b34da6a50f33bcbfe0c9a9-00f067aa0ba902b7-01")
				w := httptest.NewRecorder()
				srv.Echo.ServeHTTP(w, r)
				if w.Code != http.StatusCreated {
					b.Fatalf("status %d: %s", w.Code, w.Body.String())
				}
			}
		})
	}
}
