package httpx

import (
	"net/http"
	"reflect"
	"strconv"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

const tracerName = "github.com/july/template/adapters/http/httpx"

// Trace returns middleware that runs each request under a server span,
// continuing the caller's W3C traceparent when it sent one. Names and
// attributes follow OpenTelemetry's HTTP conventions: the span is
// "{method} {route}" (POST /api/v1/topups) for a matched route and the
// method alone otherwise; a method outside the known set names the span
// HTTP and is _OTHER in http.request.method (the raw one goes to
// http.request.method_original), so a client cannot mint span names.
// Attributes: http.request.method, http.route (the template, never the
// raw path or query, which may hold ids and tokens), url.scheme,
// http.response.status_code, error.type (the status code) on a 5xx, and
// july.request_id. Requests skip reports true for (probes, /metrics) are
// not traced. It must run inside RequestIDs and outside the middleware that
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
			method, known := knownMethods[r.Method]
			if !known {
				method = semconv.HTTPRequestMethodOther.Value.AsString()
			}
			scheme := "http"
			if r.TLS != nil {
				scheme = "https"
			}
			name := method
			if !known {
				name = "HTTP" // the conventions' name for an _OTHER method
			}
			attrs := []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(method), semconv.URLScheme(scheme),
				attribute.String(AttrRequestID, RequestID(r.Context()))}
			if !known {
				attrs = append(attrs, semconv.HTTPRequestMethodOriginal(truncate(r.Method, 32)))
			}
			if route := matchedRoute(c); route != "" {
				name += " " + route
				attrs = append(attrs, semconv.HTTPRoute(route))
			}
			ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
			ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
			defer span.End()
			c.SetRequest(r.WithContext(ctx))
			err := next(c)
			if err != nil {
				c.Error(err)
			}
			status := c.Response().Status
			span.SetAttributes(semconv.HTTPResponseStatusCode(status))
			if status >= http.StatusInternalServerError {
				span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(status)))
				span.SetStatus(codes.Error, "HTTP "+strconv.Itoa(status))
			}
			return nil
		}
	}
}

// AttrRequestID is the span attribute that carries the request's
// X-Request-ID (the template's attributes are namespaced july.*).
const AttrRequestID = "july.request_id"

// knownMethods are the methods OpenTelemetry's HTTP conventions name
// (RFC 9110 and PATCH); anything else is recorded as _OTHER.
var knownMethods = map[string]string{
	http.MethodConnect: http.MethodConnect, http.MethodDelete: http.MethodDelete, http.MethodGet: http.MethodGet,
	http.MethodHead: http.MethodHead, http.MethodOptions: http.MethodOptions, http.MethodPatch: http.MethodPatch,
	http.MethodPost: http.MethodPost, http.MethodPut: http.MethodPut, http.MethodTrace: http.MethodTrace,
}

// matchedRoute is the route template echo matched, or "" when none did:
// echo runs its not-found (404) and method-not-allowed (405) fallbacks
// under the path of the nearest node, which the request did not match.
func matchedRoute(c echo.Context) string {
	route, h := c.Path(), c.Handler()
	if route == "" || h == nil {
		return ""
	}
	if p := reflect.ValueOf(h).Pointer(); p == notFound || p == methodNotAllowed {
		return ""
	}
	return route
}

var (
	notFound         = reflect.ValueOf(echo.NotFoundHandler).Pointer()
	methodNotAllowed = reflect.ValueOf(echo.MethodNotAllowedHandler).Pointer()
)

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
