package idemhttp

import (
	"context"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/httpx"
)

type rawRequestIDKey struct{}

// CaptureKey returns the middleware that remembers the client's X-Request-ID
// exactly as sent. Install it with echo's Pre, so it runs before
// httpx.RequestIDs, which replaces a malformed id and generates a missing
// one: an idempotency key must be the client's, never one the server made
// up. Middleware refuses to run without it.
func CaptureKey() echo.MiddlewareFunc { return CaptureKeyWith(CaptureConfig{RequestIDIsKey: true}) }

// CaptureConfig says which client headers may carry the idempotency key.
type CaptureConfig struct {
	// RequestIDIsKey lets X-Request-ID stand in for a missing
	// Idempotency-Key. Turn it off behind a proxy that generates
	// X-Request-ID when the client sent none (ingress-nginx's
	// generate-request-id, Envoy): there a retry gets a fresh id, so the
	// id would be a fresh key each time and a retried create would run
	// twice. Off, only Idempotency-Key is a key and a create without it is
	// 400 IDEMPOTENCY_KEY_MISSING.
	RequestIDIsKey bool
}

// CaptureKeyWith is CaptureKey with cfg.
func CaptureKeyWith(cfg CaptureConfig) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			raw := ""
			if cfg.RequestIDIsKey {
				raw = strings.TrimSpace(r.Header.Get(httpx.HeaderRequestID))
			}
			c.SetRequest(r.WithContext(context.WithValue(r.Context(), rawRequestIDKey{}, raw)))
			return next(c)
		}
	}
}

// rawRequestID returns the captured client X-Request-ID ("" when absent)
// and whether CaptureKey ran.
func rawRequestID(ctx context.Context) (string, bool) {
	raw, ok := ctx.Value(rawRequestIDKey{}).(string)
	return raw, ok
}
