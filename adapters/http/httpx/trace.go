package httpx

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

const tracerName = "github.com/july/template/adapters/http/httpx"

// Trace returns middleware that runs each request under a server span
// named "METHOD /route/template", continuing the caller's W3C traceparent
// when it sent one. Its attributes are the method, the route template (never the
// raw path or query, which may hold ids and tokens), the status code and
// request_id. Requests skip reports true for (probes, /metrics) are not
// traced. It must run inside RequestIDs and outside the middleware that
// renders errors (so the status it records is the client's).
//
// It is ours rather than otelecho (deprecated upstream, served only at
// v0.60.0) or otelhttp around echo (which records url.path, url.query and
// client addresses, and knows no route): both would export raw request
// data.
func Trace(tp trace.TracerProvider, skip func(echo.Context) bool) echo.MiddlewareFunc {
	tracer := tp.Tracer(tracerName)
	prop := propagation.TraceContext{}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if skip != nil && skip(c) {
				return next(c)
			}
			r := c.Request()
			route := c.Path()
			if route == "" {
				route = "unmatched"
			}
			ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
			ctx, span := tracer.Start(ctx, r.Method+" "+route,
				trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(
					attribute.String("http.request.method", r.Method),
					attribute.String("http.route", route),
					attribute.String("request_id", RequestID(ctx)),
				))
			defer span.End()
			c.SetRequest(r.WithContext(ctx))
			err := next(c)
			if err != nil {
				c.Error(err)
			}
			status := c.Response().Status
			span.SetAttributes(attribute.Int("http.response.status_code", status))
			if status >= http.StatusInternalServerError {
				span.SetStatus(codes.Error, "HTTP "+strconv.Itoa(status))
			}
			return nil
		}
	}
}
