package appkit

import (
	"context"
	"log/slog"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/http/httpx"
)

// ctxHandler adds the ids carried by the context to every record logged
// with one (log.InfoContext(ctx, ...)): request_id from the HTTP request-id
// middleware, and request_id, correlation_id and event_id from the Asynq
// envelope middleware. Ids already attached by the caller (httpx.Logger,
// queue.LoggerFrom) are not repeated.
type ctxHandler struct {
	inner slog.Handler
	has   map[string]bool // keys attached through WithAttrs
}

func (h ctxHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx == nil {
		return h.inner.Handle(ctx, r)
	}
	present := map[string]bool{}
	r.Attrs(func(a slog.Attr) bool { present[a.Key] = true; return true })
	add := func(key, value string) {
		if value != "" && !h.has[key] && !present[key] {
			r.AddAttrs(slog.String(key, value))
			present[key] = true
		}
	}
	add("request_id", httpx.RequestID(ctx))
	if env, ok := queue.EnvelopeFrom(ctx); ok {
		add("request_id", env.RequestID)
		add("correlation_id", env.CorrelationID)
		add("event_id", env.EventID)
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
	return ctxHandler{inner: h.inner.WithAttrs(attrs), has: has}
}

func (h ctxHandler) WithGroup(name string) slog.Handler {
	return ctxHandler{inner: h.inner.WithGroup(name), has: h.has}
}
