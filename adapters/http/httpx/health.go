package httpx

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// DefaultReadyTimeout bounds all readiness checks together.
const DefaultReadyTimeout = 2 * time.Second

// Check is one named readiness dependency, e.g. "postgres". The name is
// all a response reveals about a failure.
type Check struct {
	Name  string
	Check func(context.Context) error
}

// Healthz answers 200 {"status":"ok"} while the process can serve at all.
// It checks no dependency, so a database outage never restarts the pod.
func Healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// Readyz returns a handler that runs checks concurrently within timeout
// (default DefaultReadyTimeout). All passing: 200 {"status":"ok"}. Otherwise
// 503 NOT_READY whose details name each failed dependency; the causes go to
// the log only.
func Readyz(timeout time.Duration, checks ...Check) echo.HandlerFunc {
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	return func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), timeout)
		defer cancel()
		errs := runChecks(ctx, checks)
		var failed []string
		var details []Detail
		var causes []error
		for i, err := range errs {
			if err != nil {
				failed = append(failed, checks[i].Name)
				details = append(details, Detail{Field: checks[i].Name, Reason: "不可用"})
				causes = append(causes, fmt.Errorf("%s: %w", checks[i].Name, err))
			}
		}
		if len(failed) == 0 {
			return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
		}
		e := Unavailable(CodeNotReady, "服务尚未就绪：依赖 "+strings.Join(failed, "、")+" 不可用，请稍后重试")
		return e.WithDetails(details...).WithCause(errors.Join(causes...))
	}
}

// RegisterHealth adds GET /healthz and GET /readyz to e.
func RegisterHealth(e *echo.Echo, timeout time.Duration, checks ...Check) {
	e.GET("/healthz", Healthz)
	e.GET("/readyz", Readyz(timeout, checks...))
}

// runChecks returns one error per check. A check that panics or outlives
// ctx counts as failed; a late one is abandoned, not waited for.
func runChecks(ctx context.Context, checks []Check) []error {
	type result struct {
		i   int
		err error
	}
	results := make(chan result, len(checks))
	for i, ch := range checks {
		go func() {
			defer func() {
				if v := recover(); v != nil {
					results <- result{i, fmt.Errorf("check panicked: %v", v)}
				}
			}()
			results <- result{i, ch.Check(ctx)}
		}()
	}
	errs := make([]error, len(checks))
	for i := range errs {
		errs[i] = context.DeadlineExceeded // overwritten by every check that reports in time
	}
	for range checks {
		select {
		case r := <-results:
			errs[r.i] = r.err
		case <-ctx.Done():
			return errs
		}
	}
	return errs
}
