package queue

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/july/template/core/outbox"
)

type ctxKey int

const (
	envelopeKey ctxKey = iota + 1
	loggerKey
)

// EnvelopeFrom returns the envelope EnvelopeMiddleware decoded for the
// current task, and false outside such a handler.
func EnvelopeFrom(ctx context.Context) (outbox.Envelope, bool) {
	env, ok := ctx.Value(envelopeKey).(outbox.Envelope)
	return env, ok
}

// LoggerFrom returns the task's logger, carrying request_id,
// correlation_id, event_id and event_type, or slog.Default() outside an
// envelope handler.
func LoggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

func withEnvelope(ctx context.Context, env outbox.Envelope, logger *slog.Logger) context.Context {
	logger = logger.With(
		slog.String("request_id", env.RequestID),
		slog.String("correlation_id", env.CorrelationID),
		slog.String("event_id", env.EventID),
		slog.String("event_type", env.EventType),
	)
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		logger = logger.With(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	ctx = context.WithValue(ctx, envelopeKey, env)
	return context.WithValue(ctx, loggerKey, logger)
}

// LogIDs returns the ids of the envelope ctx carries (request_id,
// correlation_id, event_id) as log attributes (appkit.NewLogger adds them
// to every line logged with ctx).
func LogIDs(ctx context.Context) []slog.Attr {
	env, ok := EnvelopeFrom(ctx)
	if !ok {
		return nil
	}
	return []slog.Attr{
		slog.String("request_id", env.RequestID),
		slog.String("correlation_id", env.CorrelationID),
		slog.String("event_id", env.EventID),
	}
}
