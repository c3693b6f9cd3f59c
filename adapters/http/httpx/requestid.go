package httpx

import (
	"context"
	"log/slog"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/july/template/core/idempotency"
)

// HeaderRequestID is the request-id header, accepted from clients and
// echoed on every response.
const HeaderRequestID = echo.HeaderXRequestID

type requestIDKey struct{}

// WithRequestID returns ctx carrying id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the request id stored by RequestIDs, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// Logger returns base with the request id of ctx attached, so every line a
// request logs can be joined to its access-log line and error envelope.
func Logger(ctx context.Context, base *slog.Logger) *slog.Logger {
	if id := RequestID(ctx); id != "" {
		return base.With(slog.String("request_id", id))
	}
	return base
}

// ValidRequestID reports whether a client-supplied id has the published
// format (idempotency.KeyFormat), the same one idempotent commands use.
func ValidRequestID(id string) bool {
	return idempotency.ValidateKey(id) == nil
}

// RequestIDs returns the middleware that gives every request an id: the
// client's X-Request-ID when ValidRequestID accepts it, otherwise one from
// newID (default: a random UUID). It sets the response header before the
// handler runs, so errors and panics carry it too. Install it first.
func RequestIDs(newID func() string) echo.MiddlewareFunc {
	if newID == nil {
		newID = uuid.NewString
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			id := strings.TrimSpace(r.Header.Get(HeaderRequestID))
			if !ValidRequestID(id) {
				id = newID()
			}
			// Handlers reading the header see the accepted id, never a malformed one.
			r.Header.Set(HeaderRequestID, id)
			c.Response().Header().Set(HeaderRequestID, id)
			c.SetRequest(r.WithContext(WithRequestID(r.Context(), id)))
			return next(c)
		}
	}
}

// LogIDs returns the request id ctx carries as a request_id log attribute
// (appkit.NewLogger adds it to every line logged with ctx).
func LogIDs(ctx context.Context) []slog.Attr {
	if id := RequestID(ctx); id != "" {
		return []slog.Attr{slog.String("request_id", id)}
	}
	return nil
}
