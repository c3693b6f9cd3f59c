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
func CaptureKey() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			raw := strings.TrimSpace(r.Header.Get(httpx.HeaderRequestID))
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
