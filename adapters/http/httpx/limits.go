package httpx

import (
	"mime"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// DefaultHeaderLimit caps a request's header block (names, values and the
// request line) when ServerConfig sets none. Go's http.Server refuses
// larger blocks only past its MaxHeaderBytes (1 MiB by default) and then
// answers a plain-text 431 itself; between the two the app answers 431
// HEADERS_TOO_LARGE in the envelope, with the request id.
const DefaultHeaderLimit = 16 << 10

// CodeHeadersTooLarge is the 431 of a header block over the limit.
const CodeHeadersTooLarge = "HEADERS_TOO_LARGE"

var errHeadersTooLarge = NewError(http.StatusRequestHeaderFieldsTooLarge, CodeHeadersTooLarge,
	"请求头过大：请减少或缩短请求头（例如 Cookie）后重试", false)

// HeaderLimit returns the middleware that answers 431 HEADERS_TOO_LARGE
// when the request line and headers together exceed limit bytes. It also
// closes the connection after every chunked request: net/http reads a
// request with both Content-Length and Transfer-Encoding as chunked and
// drops the Content-Length, so the pair cannot be told from plain chunked
// here, and RFC 9112 (6.1) wants the connection closed after it; a proxy
// that framed it by its Content-Length then cannot slip a second request
// in behind it.
func HeaderLimit(limit int) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if len(r.TransferEncoding) > 0 {
				c.Response().Header().Set("Connection", "close")
			}
			n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + len(r.Host)
			for k, vs := range r.Header {
				for _, v := range vs {
					n += len(k) + len(v) + 4 // ": " and CRLF
				}
			}
			if n > limit {
				return errHeadersTooLarge
			}
			return next(c)
		}
	}
}

// RequireJSON returns the middleware of a JSON route: a request whose
// Content-Type is not application/json (parameters such as charset allowed,
// and any application/*+json) answers 415 UNSUPPORTED_MEDIA_TYPE naming
// the expected type, before the body is read.
func RequireJSON() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !IsJSON(c.Request().Header.Get(echo.HeaderContentType)) {
				return NotJSON()
			}
			return next(c)
		}
	}
}

// NotJSON is the 415 of a JSON route sent another Content-Type.
func NotJSON() *Error { return errNotJSON }

var errNotJSON = NewError(http.StatusUnsupportedMediaType, CodeUnsupportedMedia,
	"不支持的 Content-Type：本接口只接受 application/json，请设置请求头 Content-Type: application/json 后重试", false).
	WithDetails(Detail{Field: "Content-Type", Reason: "须为 application/json"})

// IsJSON reports whether a Content-Type value names JSON.
func IsJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == echo.MIMEApplicationJSON || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}
