package httpx

import (
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"
)

// DefaultBodyLimit is the request-body limit when ServerConfig sets none.
const DefaultBodyLimit int64 = 1 << 20

// BodyLimit returns the middleware that caps request bodies at limit bytes.
// Reading past the cap fails with *http.MaxBytesError, which the error
// handler renders as 413 BODY_TOO_LARGE (also through echo's Bind).
//
// Installed on a route after the server-wide BodyLimit it replaces the
// server's cap for that route (an upload route may raise it), because the
// cap is applied when the body is read, not when the request arrives.
func BodyLimit(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			switch b := r.Body.(type) {
			case nil:
			case *limitedBody:
				b.limit = limit
			default:
				if r.Body != http.NoBody {
					r.Body = &limitedBody{rc: b, limit: limit, declared: r.ContentLength}
				}
			}
			return next(c)
		}
	}
}

// limitedBody is http.MaxBytesReader with a limit that a route can still
// change before the first read, and with an early failure when the
// declared Content-Length is already over the limit.
type limitedBody struct {
	rc       io.ReadCloser
	limit    int64
	declared int64
	n        int64
	err      error
	eof      bool
	// guard, when set, is the request's BodyBudget reservation and rate.
	guard *bodyGuard
}

// admit runs the checks of a read without reading: a declared length
// over the limit (413), the body budget's reservation and its rate. A
// reader calls it before sizing a buffer by Content-Length, so nothing is
// allocated for a body the server will not take.
func (b *limitedBody) admit() error {
	if b.err != nil {
		return b.err
	}
	if b.declared > b.limit {
		b.err = &http.MaxBytesError{Limit: b.limit}
		return b.err
	}
	if b.guard != nil {
		if err := b.guard.before(b.limit, b.declared); err != nil {
			b.err = err
			return err
		}
	}
	return nil
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if err := b.admit(); err != nil {
		return 0, err
	}
	if room := b.limit - b.n + 1; int64(len(p)) > room {
		p = p[:room] // one byte beyond the limit tells "too large" from "exactly full"
	}
	n, err := b.rc.Read(p)
	b.eof = b.eof || errors.Is(err, io.EOF)
	if b.guard != nil {
		if err = b.guard.after(n, err); err != nil && !errors.Is(err, io.EOF) {
			var e *Error
			if errors.As(err, &e) {
				b.err = err
			}
		}
	}
	b.n += int64(n)
	if b.n > b.limit {
		n -= int(b.n - b.limit)
		b.n = b.limit
		b.err = &http.MaxBytesError{Limit: b.limit}
		return n, b.err
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// unread reports whether some of the body was never read.
func (b *limitedBody) unread() bool {
	return !b.eof && (b.declared < 0 || b.n < b.declared)
}

// bodyLeft reports whether r's body was not read to its end. The error
// handler then closes the connection, so the server does not read and
// discard up to 256 KB of a refused request to keep it (net/http's
// maxPostHandlerReadBytes).
func bodyLeft(r *http.Request) bool {
	b, ok := r.Body.(*limitedBody)
	return ok && b.unread()
}
