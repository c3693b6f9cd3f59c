package appkit

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// IDsFunc returns the ids a context carries, as log attributes: the
// adapters that put them there provide one (httpx.LogIDs for the HTTP
// request id, queue.LogIDs for an Asynq envelope's ids).
type IDsFunc func(ctx context.Context) []slog.Attr

// ctxHandler adds the ids carried by the context to every record logged
// with one (log.InfoContext(ctx, ...)). An id already attached by the
// caller (httpx.Logger, queue.LoggerFrom), or by an earlier IDsFunc, is not
// repeated.
type ctxHandler struct {
	inner slog.Handler
	ids   []IDsFunc
	has   map[string]bool // keys attached through WithAttrs
}

func (h ctxHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx == nil {
		return h.inner.Handle(ctx, r)
	}
	present := map[string]bool{}
	r.Attrs(func(a slog.Attr) bool { present[a.Key] = true; return true })
	for _, ids := range h.ids {
		for _, a := range ids(ctx) {
			if a.Value.String() != "" && !h.has[a.Key] && !present[a.Key] {
				r.AddAttrs(a)
				present[a.Key] = true
			}
		}
	}
	return h.inner.Handle(ctx, r)
}

func (h ctxHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	has := make(map[string]bool, len(h.has)+len(attrs))
	for k := range h.has {
		has[k] = true
	}
	for _, a := range attrs {
		has[a.Key] = true
	}
	return ctxHandler{inner: h.inner.WithAttrs(attrs), ids: h.ids, has: has}
}

func (h ctxHandler) WithGroup(name string) slog.Handler {
	return ctxHandler{inner: h.inner.WithGroup(name), ids: h.ids, has: h.has}
}

// TraceIDs returns trace_id and span_id of the span ctx carries (none when
// tracing is off), so a line logged with a traced context can be found
// from its trace and the other way round. NewLogger always adds it.
func TraceIDs(ctx context.Context) []slog.Attr {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	return []slog.Attr{slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String())}
}
