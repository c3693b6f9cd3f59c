package confighttp

import (
	"cmp"
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/ports"
)

// CodeRateLimited is the 429 of a caller whose update attempts were
// rejected too often.
const CodeRateLimited = "CONFIG_UPDATE_RATE_LIMITED"

// Defaults of RejectLimit.
const (
	DefaultRejectMax    = 20
	DefaultRejectWindow = time.Minute
)

// RejectLimit bounds how many rejected update attempts one principal may
// make per window, so a caller cannot flood the audit trail: every
// rejection is still audited, up to Max per window; past it PUTs from that
// principal answer 429 CONFIG_UPDATE_RATE_LIMITED with Retry-After, the
// first of them is audited once and each is counted by OnLimited.
type RejectLimit struct {
	// Counter is shared by every replica (Redis). An in-process counter
	// counts too, and the higher count decides, so the limit holds per
	// replica while Redis fails or answers only sometimes, without adding
	// load on Postgres.
	Counter ports.WindowCounter
	// Max rejected attempts per Window. Default: DefaultRejectMax.
	Max int64
	// Window. Default: DefaultRejectWindow.
	Window time.Duration
	// OnLimited is called for every 429 (a metric). Optional.
	OnLimited func()

	local memCounter
}

// add counts in process always and in Counter when it answers; the
// higher count decides. Counting only where the call went split a flood
// between the two when some of Redis's answers timed out, each half below
// the limit.
func (l *RejectLimit) add(ctx context.Context, key string, delta int64) (int64, time.Duration) {
	w := cmp.Or(l.Window, DefaultRejectWindow)
	n, reset := l.local.Add(key, delta, w, time.Now())
	if l.Counter != nil {
		if shared, sreset, err := l.Counter.Add(ctx, key, delta, w); err == nil && shared >= n {
			return shared, sreset
		}
	}
	return n, reset
}

var errRateLimited = httpx.TooManyRequests(CodeRateLimited,
	"配置修改被拒绝的次数过多：请在 Retry-After 指定的秒数后再试，并先确认权限、键名和取值是否正确")

// limitRejected wraps the PUT route (outside requireAdmin, so a forbidden
// caller is limited too).
func (h *handlers) limitRejected(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		p, ok := auth.PrincipalFrom(ctx)
		if !ok || h.limit == nil {
			return next(c)
		}
		l, key := h.limit, "config-rejected:"+p.Subject
		if n, _ := l.add(ctx, key, 0); n >= cmp.Or(l.Max, DefaultRejectMax) {
			n, reset := l.add(ctx, key, 1)
			if l.OnLimited != nil {
				l.OnLimited()
			}
			e := errRateLimited.WithCause(nil)
			e.RetryAfter = max(reset, time.Second)
			if n == cmp.Or(l.Max, DefaultRejectMax)+1 { // the first 429 of the window is audited
				_ = h.rejected(c, e)
			}
			return e
		}
		err := next(c)
		if err != nil && !httpx.IsBudgetRefusal(err) { // the budget's refusals are not the caller's
			if s := httpx.Resolve(err, MapError).Status; s >= 400 && s < 500 && s != http.StatusUnauthorized {
				l.add(ctx, key, 1)
			}
		}
		return err
	}
}

// memCounter is the in-process fallback of RejectLimit.
type memCounter struct {
	mu sync.Mutex
	m  map[string]memWindow
}

type memWindow struct {
	n   int64
	end time.Time
}

// Add is ports.WindowCounter's rule in memory; it forgets everything when
// it holds too many keys (a flood of principals cannot grow it unbounded).
func (m *memCounter) Add(key string, delta int64, window time.Duration, now time.Time) (int64, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) > 10000 {
		m.m = map[string]memWindow{}
	}
	w := m.m[key]
	if !now.Before(w.end) {
		w = memWindow{end: now.Add(window)}
	}
	w.n += delta
	if delta != 0 {
		m.m[key] = w
	}
	return w.n, w.end.Sub(now)
}
