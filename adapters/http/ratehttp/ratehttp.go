// Package ratehttp bounds how often one principal may run a command: a
// per-principal count in fixed windows, checked in a route middleware
// before the body is read, before any transaction and before a pooled
// Postgres connection is held, so a refused request costs one Redis
// round trip.
//
// The count lives in a ports.WindowCounter (Redis), so every api replica
// shares it. When the counter fails (Redis down) or is nil, an in-process
// count takes over: the bound then holds per replica (a caller may reach
// replicas × limit), and Postgres carries no extra load. It never fails
// open and never answers 503 for it.
package ratehttp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/ports"
)

// CodeRateLimited is the default code of the 429.
const CodeRateLimited = "RATE_LIMITED"

// DefaultWindow is Config.Window's default.
const DefaultWindow = time.Minute

// maxLocalKeys bounds the in-process fallback: past it, it starts over,
// so a flood of principals cannot grow it without bound.
const maxLocalKeys = 10_000

// Config configures Middleware for one command.
type Config struct {
	// Name is the command's stable name, e.g. "topup.create"; it starts
	// the counter's keys. Required.
	Name string
	// LimitFunc returns the requests one principal may make per Window
	// (a system-config key, read per request); below 1 means no limit.
	// Its error fails the request (a wiring bug: a registered key's read
	// does not fail). Required.
	LimitFunc func(ctx context.Context) (int64, error)
	// Window is the counting window; windows are aligned to multiples of
	// it since the Unix epoch on Clock. Default: DefaultWindow.
	Window time.Duration
	// Counter is shared by every replica (Redis). Nil or failing: the
	// in-process count.
	Counter ports.WindowCounter
	// Clock decides the window. Default: ports.SystemClock.
	Clock ports.Clock
	// Refusal builds the 429 for limit; its RetryAfter is set by the
	// middleware. Default: CodeRateLimited with a generic message.
	Refusal func(limit int64) *httpx.Error
	// OnLimited is called for every 429 (a metric). Optional.
	OnLimited func()
}

// Middleware returns the rate middleware: for an authenticated request it
// counts one hit on the principal's current window and, past the limit,
// answers the Refusal (429, retryable) with Retry-After set to the
// window's end, without calling the handler. Every request counts,
// replays of an accepted request included: it runs before anything is
// looked up. A request without a principal passes (the auth middleware
// answers it). It returns an error for an invalid Config.
func Middleware(cfg Config) (echo.MiddlewareFunc, error) {
	switch {
	case cfg.Name == "":
		return nil, errors.New("ratehttp: Config.Name is empty")
	case cfg.LimitFunc == nil:
		return nil, errors.New("ratehttp: Config.LimitFunc is nil")
	case cfg.Window < 0 || (cfg.Window > 0 && cfg.Window < time.Second):
		return nil, fmt.Errorf("ratehttp: Config.Window %s is below 1s; use 0 for DefaultWindow", cfg.Window)
	}
	cfg.Window = cmp.Or(cfg.Window, DefaultWindow)
	cfg.Clock = cmp.Or[ports.Clock](cfg.Clock, ports.SystemClock)
	if cfg.Refusal == nil {
		cfg.Refusal = defaultRefusal
	}
	l := &limiter{cfg: cfg}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := l.check(c.Request().Context()); err != nil {
				return err
			}
			return next(c)
		}
	}, nil
}

func defaultRefusal(limit int64) *httpx.Error {
	return httpx.TooManyRequests(CodeRateLimited,
		fmt.Sprintf("请求过于频繁：每分钟最多 %d 次，请在 Retry-After 指定的秒数后重试", limit))
}

type limiter struct {
	cfg Config

	mu          sync.Mutex
	local       map[string]int64 // the fallback's counts in localWindow
	localWindow int64
}

// check counts the request and returns the 429 when it is over the limit.
func (l *limiter) check(ctx context.Context) error {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok || p.Subject == "" {
		return nil
	}
	limit, err := l.cfg.LimitFunc(ctx)
	if err != nil {
		return httpx.Internal(fmt.Errorf("ratehttp: %s: read limit: %w", l.cfg.Name, err))
	}
	if limit < 1 {
		return nil
	}
	w := l.cfg.Window.Milliseconds()
	now := l.cfg.Clock.Now().UnixMilli()
	window := now / w
	resetIn := time.Duration((window+1)*w-now) * time.Millisecond
	n := l.count(ctx, window, p.Subject)
	if n <= limit {
		return nil
	}
	if l.cfg.OnLimited != nil {
		l.cfg.OnLimited()
	}
	e := l.cfg.Refusal(limit).WithCause(fmt.Errorf("ratehttp: %s: %d requests in the window, limit %d", l.cfg.Name, n, limit))
	e.RetryAfter = (resetIn + time.Second - 1).Truncate(time.Second)
	return e
}

// count adds one hit of subject in window to the shared counter, or in
// process when the counter fails.
func (l *limiter) count(ctx context.Context, window int64, subject string) int64 {
	if l.cfg.Counter != nil {
		// The key names its window, so the counter's own expiry only
		// cleans up: a key lives at most two windows in Redis.
		key := "rate:" + l.cfg.Name + ":" + strconv.FormatInt(window, 10) + ":" + subject
		if n, _, err := l.cfg.Counter.Add(ctx, key, 1, 2*l.cfg.Window); err == nil {
			return n
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.local == nil || window != l.localWindow || len(l.local) >= maxLocalKeys {
		l.local, l.localWindow = map[string]int64{}, window
	}
	l.local[subject]++
	return l.local[subject]
}
