package httpx

import (
	"cmp"
	"log/slog"

	"github.com/labstack/echo/v4"
)

// DefaultBodyBudget is the in-flight request-body budget when
// ServerConfig sets none: 64 concurrent bodies at the default limit.
const DefaultBodyBudget int64 = 64 << 20

// ServerConfig configures NewServer. The zero value is usable.
type ServerConfig struct {
	// BodyLimit caps request bodies. Default: DefaultBodyLimit (1 MiB).
	// Raise it per route with BodyLimit.
	BodyLimit int64
	// BodyBudget bounds the bytes of request bodies in flight at once
	// (see BodyBudget). Default: DefaultBodyBudget; negative disables it.
	// Ignored when Budget is set.
	BodyBudget int64
	// Budget, when set, is the body budget (shares, minimum rate) to
	// install; nil: NewBodyBudget(BudgetConfig{Budget: BodyBudget}).
	Budget *BodyBudget
	// HeaderLimit caps the request line and headers. Default:
	// DefaultHeaderLimit (16 KiB).
	HeaderLimit int
	// Middleware runs after the request id is assigned and outside panic
	// recovery, in order: put the access log here so it sees every request,
	// including panics, with its final status.
	Middleware []echo.MiddlewareFunc
	// IPExtractor decides the client IP. Default: echo.ExtractIPDirect(),
	// the peer address; set a trusting extractor only behind a known proxy.
	IPExtractor echo.IPExtractor
	// NewRequestID generates request ids. Default: random UUIDs.
	NewRequestID func() string
}

// NewServer returns an echo server wired with, in order: RequestIDs,
// cfg.Middleware, Recover, HeaderLimit, BodyBudget and BodyLimit, and with NewErrorHandler(log,
// mappers...) as its only error handler. Routes are added by the caller.
func NewServer(cfg ServerConfig, log *slog.Logger, mappers ...ErrorMapper) *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = NewErrorHandler(log, mappers...)
	e.IPExtractor = cfg.IPExtractor
	if e.IPExtractor == nil {
		e.IPExtractor = echo.ExtractIPDirect()
	}
	e.Use(RequestIDs(cfg.NewRequestID))
	e.Use(cfg.Middleware...)
	limit := cmp.Or(cfg.BodyLimit, DefaultBodyLimit)
	budget := cfg.Budget
	if budget == nil {
		budget = NewBodyBudget(BudgetConfig{Budget: cfg.BodyBudget})
	}
	e.Use(Recover(log), HeaderLimit(cmp.Or(cfg.HeaderLimit, DefaultHeaderLimit)),
		budget.Middleware(), BodyLimit(limit))
	return e
}
