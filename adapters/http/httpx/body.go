package httpx

import (
	"bytes"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"
)

const (
	bodyKey        = "httpx.body"
	bodyReadingKey = "httpx.body.reading"
)

// ReadingBody reports whether ReadBody is reading c's body right now. A
// middleware that taps the body (the access log) skips its own copy while
// it is, and takes SharedBody afterwards: the bytes are held once.
func ReadingBody(c echo.Context) bool { return c.Get(bodyReadingKey) != nil }

// SharedBody returns the body ReadBody read, if it did.
func SharedBody(c echo.Context) ([]byte, bool) {
	b, ok := c.Get(bodyKey).([]byte)
	return b, ok
}

// ReadBody returns the request body, read once per request and shared by
// every later caller (the idempotency middleware, the handler): a body is
// held in memory once. A declared Content-Length sizes the buffer exactly
// (no doubling growth). After the read, the request's Body replays the same
// bytes without copying them. An oversized body returns the
// *http.MaxBytesError of BodyLimit (413); a body BodyBudget refuses, its
// *Error, before any buffer is allocated.
func ReadBody(c echo.Context) ([]byte, error) {
	if b, ok := c.Get(bodyKey).([]byte); ok {
		return b, nil
	}
	r := c.Request()
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if lb, ok := r.Body.(*limitedBody); ok {
		if err := lb.admit(); err != nil { // reserve before allocating
			return nil, err
		}
	}
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= DefaultBodyLimit*64 {
		buf.Grow(int(n) + bytes.MinRead) // ReadFrom wants MinRead spare bytes before EOF
	}
	c.Set(bodyReadingKey, true)
	_, err := buf.ReadFrom(r.Body)
	c.Set(bodyReadingKey, nil)
	_ = r.Body.Close()
	if err != nil {
		return nil, err
	}
	b := buf.Bytes()
	c.Set(bodyKey, b)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}
