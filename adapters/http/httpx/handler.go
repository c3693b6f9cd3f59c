package httpx

import (
	"github.com/july/template/core/redaction"

	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/july/template/core/ports"
)

// ErrorMapper maps the typed errors of one domain package to an *Error.
// It returns false for errors it does not know. Mappers are registered once,
// in the app's wiring, so each status code is decided in one place.
type ErrorMapper func(error) (*Error, bool)

// envelope is the wire form of every non-2xx response.
type envelope struct {
	Error envelopeBody `json:"error"`
}

type envelopeBody struct {
	Code      string   `json:"code"`
	Message   string   `json:"message"`
	RequestID string   `json:"request_id"`
	Retryable bool     `json:"retryable"`
	Details   []Detail `json:"details"`
}

// NewErrorHandler returns the server's only echo.HTTPErrorHandler. It
// resolves err to an *Error (see the package doc for the order), logs it
// (5xx at ERROR with the cause chain, 4xx at INFO) and writes the envelope.
// A 5xx body never contains the cause's text.
func NewErrorHandler(log *slog.Logger, mappers ...ErrorMapper) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		e := Resolve(err, mappers...)
		ctx := c.Request().Context()
		logError(Logger(ctx, log), c, e, err)
		if c.Response().Committed {
			return // the handler already started a response; nothing more can be sent
		}
		if bodyLeft(c.Request()) {
			c.Response().Header().Set("Connection", "close")
		}
		if e.RetryAfter > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(max(1, int(e.RetryAfter.Seconds()))))
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(e.Status)
			return
		}
		body := envelopeBody{
			Code: e.Code, Message: e.Message, RequestID: RequestID(ctx),
			Retryable: e.Retryable, Details: e.Details,
		}
		if body.Details == nil {
			body.Details = []Detail{}
		}
		if e.Status >= http.StatusInternalServerError && body.Message == "" {
			body.Message = MsgInternal
		}
		if werr := c.JSON(e.Status, envelope{Error: body}); werr != nil {
			Logger(ctx, log).DebugContext(ctx, "error response not written", slog.Any("error", werr))
		}
	}
}

// Resolve returns the *Error err renders as: an *Error in its chain, else
// the first mapper's answer, else DependencyUnavailable for an error
// wrapping ports.ErrUnavailable (every adapter classifies its outages so),
// else a mapping of net/http and echo errors, else Internal(err). An *Error found in the chain is returned as is; every
// other result carries err as its cause, for the log.
func Resolve(err error, mappers ...ErrorMapper) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	for _, m := range mappers {
		if e, ok := m(err); ok && e != nil {
			if e.Err == nil {
				e = e.WithCause(err)
			}
			return e
		}
	}
	if errors.Is(err, ports.ErrUnavailable) {
		return DependencyUnavailable(err)
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return bodyTooLarge.WithCause(err)
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return fromHTTPError(he).WithCause(err)
	}
	return Internal(err)
}

var bodyTooLarge = NewError(http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
	"请求体过大：请缩小请求体或分批提交后重试", false)

// fromHTTPError maps echo's own errors (routing, binding, its middleware).
// Their English messages are never rendered: they can quote the request.
func fromHTTPError(he *echo.HTTPError) *Error {
	switch he.Code {
	case http.StatusBadRequest:
		e := BadRequest(CodeRequestInvalid, "请求格式不正确：请检查请求体的 JSON 语法、字段类型和查询参数")
		var ute *json.UnmarshalTypeError
		if errors.As(he.Internal, &ute) && ute.Field != "" {
			e.Details = []Detail{{Field: ute.Field, Reason: "类型不匹配，应为 " + ute.Type.String()}}
		}
		return e
	case http.StatusUnauthorized:
		return Unauthorized(CodeUnauthenticated, "未登录或登录已过期：请重新登录后重试")
	case http.StatusForbidden:
		return Forbidden(CodeForbidden, "当前账号无权执行此操作")
	case http.StatusNotFound:
		return NotFound(CodeRouteNotFound, "接口不存在：请检查请求路径和 API 版本")
	case http.StatusMethodNotAllowed:
		return NewError(he.Code, CodeMethodNotAllowed, "接口不支持该 HTTP 方法：请使用响应头 Allow 中列出的方法", false)
	case http.StatusRequestEntityTooLarge:
		return bodyTooLarge
	case http.StatusUnsupportedMediaType:
		return NewError(he.Code, CodeUnsupportedMedia, "不支持的 Content-Type：请使用 application/json", false)
	case http.StatusTooManyRequests:
		return TooManyRequests(CodeTooManyRequests, "请求过于频繁：请稍后重试")
	case http.StatusServiceUnavailable:
		return Unavailable(CodeUnavailable, "服务暂时不可用：请稍后重试")
	}
	if he.Code >= http.StatusInternalServerError || he.Code < http.StatusBadRequest {
		return Internal(nil)
	}
	return NewError(he.Code, CodeRequestRejected, "请求被拒绝：请检查请求内容后重试", false)
}

var causeRedactor = &redaction.Redactor{}

const messageRedactorKey = "httpx.message_redactor"

// SetMessageRedactor makes the error and panic lines of c's request clean
// their free text (the cause, the panic value) with f: the access log sets
// its route policy's, so a default-deny route logs their shape only.
// Without one they are cleaned like any log line (redaction.RedactText).
func SetMessageRedactor(c echo.Context, f func(string) string) { c.Set(messageRedactorKey, f) }

func redactMessage(c echo.Context, s string) string {
	if f, ok := c.Get(messageRedactorKey).(func(string) string); ok {
		return f(s)
	}
	return causeRedactor.RedactText(s)
}

// logError logs one line per failed request. Panics were already logged,
// with their stack, by Recover.
func logError(log *slog.Logger, c echo.Context, e *Error, err error) {
	var pe *panicError
	if errors.As(err, &pe) {
		return
	}
	ctx := c.Request().Context()
	attrs := []slog.Attr{
		slog.Int("status", e.Status), slog.String("code", e.Code),
		slog.String("method", c.Request().Method), slog.String("route", c.Path()),
	}
	if e.Err != nil {
		// Causes may quote upstream text (a DSN, a header, a value in a
		// constraint message): redact before it reaches the log.
		attrs = append(attrs, slog.String("error", redactMessage(c, e.Err.Error())))
	}
	// A draining instance's 503 is its expected end, not a failure.
	if e.Status >= http.StatusInternalServerError && e.Code != CodeShuttingDown {
		log.LogAttrs(ctx, slog.LevelError, "request failed", attrs...)
		return
	}
	log.LogAttrs(ctx, slog.LevelInfo, "request rejected", attrs...)
}
