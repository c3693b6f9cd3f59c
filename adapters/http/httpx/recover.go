package httpx

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/labstack/echo/v4"
)

// panicError is the cause of the 500 a recovered panic becomes. It carries
// no stack: the stack goes to the log only.
type panicError struct{ value any }

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// Recover returns the middleware that turns a panic in a later handler into
// the 500 envelope. It logs the panic once, at ERROR, with the request id
// and the stack, its value cleaned under the route's policy
// (SetMessageRedactor); the response carries neither. http.ErrAbortHandler is
// re-panicked, as net/http expects.
func Recover(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if v == http.ErrAbortHandler { //nolint:errorlint // recover() returns the value net/http panicked with, unwrapped
					panic(v)
				}
				ctx := c.Request().Context()
				Logger(ctx, log).LogAttrs(ctx, slog.LevelError, "panic recovered",
					slog.String("code", CodeInternal),
					slog.String("method", c.Request().Method), slog.String("route", c.Path()),
					slog.String("panic", redactMessage(c, fmt.Sprint(v))), slog.String("stack", string(debug.Stack())))
				err = Internal(&panicError{value: v})
			}()
			return next(c)
		}
	}
}
