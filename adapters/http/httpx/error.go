package httpx

import (
	"net/http"
	"time"
)

// Stable machine codes this package emits. Clients branch on codes, never
// on messages.
const (
	CodeInternal         = "INTERNAL_ERROR"
	CodeRouteNotFound    = "ROUTE_NOT_FOUND"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	CodeBodyTooLarge     = "BODY_TOO_LARGE"
	CodeRequestInvalid   = "REQUEST_INVALID"
	CodeUnsupportedMedia = "UNSUPPORTED_MEDIA_TYPE"
	CodeTooManyRequests  = "TOO_MANY_REQUESTS"
	CodeRequestRejected  = "REQUEST_REJECTED"
	CodeUnauthenticated  = "UNAUTHENTICATED"
	CodeForbidden        = "FORBIDDEN"
	CodeNotReady         = "NOT_READY"
	CodeUnavailable      = "SERVICE_UNAVAILABLE"
	// CodeDependencyUnavailable is a request that needed a backing service
	// (Postgres, or Redis where a route truly needs it) while it was down.
	CodeDependencyUnavailable = "DEPENDENCY_UNAVAILABLE"
)

// DependencyRetryAfter is the Retry-After of a DEPENDENCY_UNAVAILABLE answer.
const DependencyRetryAfter = 5 * time.Second

// MsgInternal is the only message a 500 ever carries.
const MsgInternal = "服务内部错误，请稍后重试；如持续出现请提供 request_id 联系支持"

// Detail points at one thing the caller must fix, typically a field.
type Detail struct {
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason"`
}

// Error is an error with its HTTP rendering. Return it (or an error that
// wraps it, or one an ErrorMapper maps) from a handler. Message is shown to
// users: Chinese, and saying what to do next. Err is the cause; it is
// logged but never rendered.
type Error struct {
	Status    int
	Code      string
	Message   string
	Retryable bool
	Details   []Detail
	// RetryAfter, when positive, is sent as the Retry-After header (whole
	// seconds, at least 1).
	RetryAfter time.Duration
	Err        error
}

// Error implements error. It is for logs: code and cause, not the message.
func (e *Error) Error() string {
	if e.Err == nil {
		return "http " + http.StatusText(e.Status) + ": " + e.Code
	}
	return "http " + http.StatusText(e.Status) + ": " + e.Code + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// WithCause returns a copy of e with cause err, for the log.
func (e *Error) WithCause(err error) *Error {
	cp := *e
	cp.Err = err
	return &cp
}

// WithDetails returns a copy of e with details appended.
func (e *Error) WithDetails(d ...Detail) *Error {
	cp := *e
	cp.Details = append(append([]Detail(nil), e.Details...), d...)
	return &cp
}

// NewError returns an *Error. Statuses of 500 and above render MsgInternal
// unless msg is set; use the named constructors where one fits.
func NewError(status int, code, msg string, retryable bool) *Error {
	return &Error{Status: status, Code: code, Message: msg, Retryable: retryable}
}

// BadRequest is a 400: the request is malformed; not retryable.
func BadRequest(code, msg string) *Error { return NewError(http.StatusBadRequest, code, msg, false) }

// Unauthorized is a 401: the caller is not authenticated.
func Unauthorized(code, msg string) *Error {
	return NewError(http.StatusUnauthorized, code, msg, false)
}

// Forbidden is a 403: the caller may not do this.
func Forbidden(code, msg string) *Error { return NewError(http.StatusForbidden, code, msg, false) }

// NotFound is a 404.
func NotFound(code, msg string) *Error { return NewError(http.StatusNotFound, code, msg, false) }

// Conflict is a 409: the current state forbids the request. Set Retryable
// when waiting can help (a request still in flight).
func Conflict(code, msg string) *Error { return NewError(http.StatusConflict, code, msg, false) }

// Unprocessable is a 422: well formed but semantically invalid.
func Unprocessable(code, msg string) *Error {
	return NewError(http.StatusUnprocessableEntity, code, msg, false)
}

// TooManyRequests is a 429; retryable.
func TooManyRequests(code, msg string) *Error {
	return NewError(http.StatusTooManyRequests, code, msg, true)
}

// Unavailable is a 503: a dependency is down; retryable.
func Unavailable(code, msg string) *Error {
	return NewError(http.StatusServiceUnavailable, code, msg, true)
}

// DependencyUnavailable is the 503 of a request that needed a backing
// service that is down (an error wrapping ports.ErrUnavailable): retryable,
// with Retry-After, and naming nothing internal.
func DependencyUnavailable(err error) *Error {
	return &Error{
		Status: http.StatusServiceUnavailable, Code: CodeDependencyUnavailable,
		Message:   "依赖的服务暂时不可用，请求未被处理：请在 Retry-After 指定的秒数后使用相同的请求重试",
		Retryable: true, RetryAfter: DependencyRetryAfter, Err: err,
	}
}

// Internal is the generic 500 for cause err.
func Internal(err error) *Error {
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: MsgInternal, Retryable: true, Err: err}
}
