package httpx

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
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
	// Optional marks a dependency the app serves without (the API's Redis:
	// reads fall back to Postgres, Postgres decides creates). Its failure is
	// reported as degraded in the 200 body, never as unready.
	Optional bool
}

// CodeShuttingDown is /readyz's 503 while the server drains for shutdown.
const CodeShuttingDown = "SHUTTING_DOWN"

// Healthz answers 200 {"status":"ok"} while the process can serve at all.
// It checks no dependency, so a database outage never restarts the pod.
func Healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// Health serves GET /healthz and GET /readyz. The zero value has no checks
// and the default timeout.
type Health struct {
	// Timeout bounds all checks together. Default: DefaultReadyTimeout.
	Timeout time.Duration
	// Checks are the dependencies /readyz checks, concurrently.
	Checks []Check
	// Report, when set, receives every check's outcome (for a
	// dependency_up gauge); a late check reports when it finishes.
	Report func(name string, up bool)
	// Logger gets a WARN line per degraded dependency. Default: slog.Default().
	Logger *slog.Logger

	draining atomic.Bool
}

// Drain makes /readyz answer 503 SHUTTING_DOWN from now on, so the
// orchestrator stops routing new requests while in-flight ones finish.
// Every other route keeps serving.
func (h *Health) Drain() { h.draining.Store(true) }

// Register adds GET /healthz and GET /readyz to e.
func (h *Health) Register(e *echo.Echo) {
	e.GET("/healthz", Healthz)
	e.GET("/readyz", h.Readyz)
}

// readiness is /readyz's 200 body; Degraded names the optional
// dependencies that are down.
type readiness struct {
	Status   string   `json:"status"`
	Degraded []string `json:"degraded,omitempty"`
}

// Readyz answers 200 {"status":"ok"} when every check passes, 200
// {"status":"degraded","degraded":[...]} when only Optional ones fail,
// and 503 NOT_READY whose details name each failed required dependency
// otherwise (503 SHUTTING_DOWN once Drain was called). Causes go to the
// log only.
func (h *Health) Readyz(c echo.Context) error {
	if h.draining.Load() {
		return Unavailable(CodeShuttingDown, "服务正在停止，不再接收新流量：请求将由其他实例处理")
	}
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	checks := h.Checks
	if h.Report != nil {
		checks = make([]Check, len(h.Checks))
		for i, ch := range h.Checks {
			checks[i] = ch
			checks[i].Check = func(ctx context.Context) error {
				err := ch.Check(ctx)
				h.Report(ch.Name, err == nil)
				return err
			}
		}
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), timeout)
	defer cancel()
	errs := runChecks(ctx, checks)
	var failed, degraded []string
	var details []Detail
	var causes []error
	for i, err := range errs {
		switch {
		case err == nil:
		case checks[i].Optional:
			degraded = append(degraded, checks[i].Name)
			Logger(ctx, cmp.Or(h.Logger, slog.Default())).LogAttrs(ctx, slog.LevelWarn, "dependency degraded",
				slog.String("dependency", checks[i].Name), slog.String("error", causeRedactor.RedactText(err.Error())))
		default:
			failed = append(failed, checks[i].Name)
			details = append(details, Detail{Field: checks[i].Name, Reason: "不可用"})
			causes = append(causes, fmt.Errorf("%s: %w", checks[i].Name, err))
		}
	}
	if len(failed) == 0 {
		if len(degraded) > 0 {
			return c.JSON(http.StatusOK, readiness{Status: "degraded", Degraded: degraded})
		}
		return c.JSON(http.StatusOK, readiness{Status: "ok"})
	}
	e := Unavailable(CodeNotReady, "服务尚未就绪：依赖 "+strings.Join(failed, "、")+" 不可用，请稍后重试")
	return e.WithDetails(details...).WithCause(errors.Join(causes...))
}

// Readyz returns Health{Timeout: timeout, Checks: checks}.Readyz.
func Readyz(timeout time.Duration, checks ...Check) echo.HandlerFunc {
	h := &Health{Timeout: timeout, Checks: checks}
	return h.Readyz
}

// RegisterHealth adds GET /healthz and GET /readyz to e.
func RegisterHealth(e *echo.Echo, timeout time.Duration, checks ...Check) {
	(&Health{Timeout: timeout, Checks: checks}).Register(e)
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
