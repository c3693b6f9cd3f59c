package httpx

import (
	"cmp"
	"errors"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// Defaults of BudgetConfig.
const (
	// DefaultBodyShare is the part of the budget one principal's bodies
	// may hold together: 8 bodies at the default limit.
	DefaultBodyShare int64 = 8 << 20
	// DefaultBodyMinRate is the slowest average a body may arrive at
	// after DefaultBodyRateGrace, in bytes per second (128 kbit/s).
	DefaultBodyMinRate int64 = 16 << 10
	// DefaultBodyRateGrace is how long a body may send nothing at all
	// before the minimum rate applies.
	DefaultBodyRateGrace = 5 * time.Second
)

// Stable codes of the budget's answers.
const (
	// CodeServerBusy is the 503 of a request whose body would exceed the
	// server's in-flight body budget.
	CodeServerBusy = "SERVER_BUSY"
	// CodeBodyShareExceeded is the 429 of a request whose body would take
	// its principal past its share of the budget.
	CodeBodyShareExceeded = "BODY_SHARE_EXCEEDED"
	// CodeBodyTooSlow is the 408 of a request whose body arrived slower
	// than the minimum rate; it was cut off.
	CodeBodyTooSlow = "BODY_TOO_SLOW"
)

var (
	errServerBusy = &Error{
		Status: http.StatusServiceUnavailable, Code: CodeServerBusy,
		Message:   "服务繁忙，暂时无法接收更多请求体：请在 Retry-After 指定的秒数后重试",
		Retryable: true, RetryAfter: time.Second,
	}
	errBodyShare = &Error{
		Status: http.StatusTooManyRequests, Code: CodeBodyShareExceeded,
		Message:   "当前账号同时发送中的请求体过多：请等待进行中的请求完成，在 Retry-After 指定的秒数后重试",
		Retryable: true, RetryAfter: time.Second,
	}
	errBodyTooSlow = &Error{
		Status: http.StatusRequestTimeout, Code: CodeBodyTooSlow,
		Message:   "请求体发送过慢，服务器已停止接收：请检查网络后重新发送完整的请求",
		Retryable: true,
	}
)

// BudgetConfig configures NewBodyBudget. The zero value is usable.
type BudgetConfig struct {
	// Budget bounds the request-body bytes all in-flight requests hold
	// together. Default: DefaultBodyBudget; negative: no budget (the rate
	// still applies).
	Budget int64
	// Share bounds the bytes one principal's in-flight bodies hold
	// together; a principal that holds nothing may always reserve one body
	// (up to its route's limit) while the budget has room. The budget's
	// last Share bytes are kept for principals that hold nothing: one that
	// already holds a body is refused (503) once the rest is in use.
	// Default: DefaultBodyShare; negative: no shares. It only applies with
	// PrincipalFunc.
	Share int64
	// PrincipalFunc names the principal a body is charged to, asked at the
	// body's first read (after authentication); "" is every
	// unauthenticated caller, together. Nil: no shares.
	PrincipalFunc func(echo.Context) string
	// MinRate is the slowest average, in bytes per second, a body may
	// arrive at after Grace; a slower one is cut off with 408
	// BODY_TOO_SLOW and its reservation released. Default:
	// DefaultBodyMinRate; negative: no minimum.
	MinRate int64
	// Grace is how long a body may send nothing before MinRate applies.
	// Default: DefaultBodyRateGrace.
	Grace time.Duration
	// ReadTimeout, when positive, bounds a body's whole read however fast
	// it arrives: the server's http.Server.ReadTimeout, which the rate's
	// read deadlines replace.
	ReadTimeout time.Duration
}

// BodyBudget bounds the memory request bodies hold, by reservation: a
// body reserves its declared Content-Length (its route's limit when larger
// or undeclared) at its first read, when the route's limit and the
// principal are known, and releases it when the request ends. A request
// that never reads its body (a 401, a 404) reserves nothing.
//
// A reservation that would take the principal past its share answers 429
// BODY_SHARE_EXCEEDED, one past the whole budget 503 SERVER_BUSY (for a
// principal already holding a body: past the budget less one share), both
// retryable with Retry-After: 1. IsBudgetRefusal tells these answers from
// a caller's mistakes. A body that arrives slower than the
// minimum rate (a stalled or trickling client) is cut off with 408
// BODY_TOO_SLOW and releases its reservation at once, so no client holds
// memory by sending slowly.
type BodyBudget struct {
	cfg   BudgetConfig
	mu    sync.Mutex
	total int64
	held  map[string]int64
}

// NewBodyBudget returns a budget with cfg's defaults applied.
func NewBodyBudget(cfg BudgetConfig) *BodyBudget {
	cfg.Budget = cmp.Or(cfg.Budget, DefaultBodyBudget)
	cfg.Share = cmp.Or(cfg.Share, DefaultBodyShare)
	cfg.MinRate = cmp.Or(cfg.MinRate, DefaultBodyMinRate)
	cfg.Grace = cmp.Or(cfg.Grace, DefaultBodyRateGrace)
	if cfg.PrincipalFunc == nil {
		cfg.Share = -1
	}
	return &BodyBudget{cfg: cfg, held: map[string]int64{}}
}

// InUse returns the bytes reserved by in-flight bodies now.
func (b *BodyBudget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// Middleware installs the budget on every request with a body. It must run
// before BodyLimit, which sets the limit the reservation is sized by.
func (b *BodyBudget) Middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.Body == nil || r.Body == http.NoBody {
				return next(c)
			}
			g := &bodyGuard{budget: b, c: c}
			lb, ok := r.Body.(*limitedBody)
			if !ok {
				lb = &limitedBody{rc: r.Body, limit: DefaultBodyLimit, declared: r.ContentLength}
				r.Body = lb
			}
			lb.guard = g
			defer g.release()
			return next(c)
		}
	}
}

// reserve charges n bytes to key.
func (b *BodyBudget) reserve(key string, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	held := b.held[key]
	if b.cfg.Share > 0 && held > 0 && held+n > b.cfg.Share {
		return errBodyShare
	}
	// The last share of the budget is kept for principals that hold
	// nothing, so a few principals each within their share cannot fill it.
	limit := b.cfg.Budget
	if b.cfg.Share > 0 && held > 0 {
		limit -= b.cfg.Share
	}
	if b.cfg.Budget > 0 && b.total+n > limit {
		return errServerBusy
	}
	b.held[key] = held + n
	b.total += n
	return nil
}

func (b *BodyBudget) unreserve(key string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total -= n
	if b.held[key] -= n; b.held[key] <= 0 {
		delete(b.held, key)
	}
}

// bodyGuard is one request body's reservation and rate clock.
type bodyGuard struct {
	budget   *BodyBudget
	c        echo.Context
	key      string
	reserved int64
	started  time.Time
	read     int64
	deadline bool // a read deadline is set on the connection
}

// before runs ahead of every read: the first one reserves; each one
// checks the rate and sets the connection's read deadline to the moment
// the body would fall below it.
func (g *bodyGuard) before(limit, declared int64) error {
	now := time.Now()
	if g.started.IsZero() {
		n := limit
		if declared >= 0 && declared < limit {
			n = declared
		}
		if f := g.budget.cfg.PrincipalFunc; f != nil {
			g.key = f(g.c)
		}
		if err := g.budget.reserve(g.key, n); err != nil {
			return err
		}
		g.reserved, g.started = n, now
	}
	due, ok := g.due()
	if !ok {
		return nil
	}
	if !now.Before(due) {
		return g.tooSlow()
	}
	if err := http.NewResponseController(g.c.Response()).SetReadDeadline(due); err == nil {
		g.deadline = true
	}
	return nil
}

// due is when the body must have sent its next byte.
func (g *bodyGuard) due() (time.Time, bool) {
	cfg := g.budget.cfg
	var due time.Time
	if cfg.MinRate > 0 {
		due = g.started.Add(cfg.Grace + time.Duration(float64(g.read)/float64(cfg.MinRate)*float64(time.Second)))
	}
	if cfg.ReadTimeout > 0 {
		if end := g.started.Add(cfg.ReadTimeout); due.IsZero() || end.Before(due) {
			due = end
		}
	}
	return due, !due.IsZero()
}

// after accounts a read's n bytes and turns a missed read deadline into
// BODY_TOO_SLOW. At the end of the body it lifts the deadline, so the
// server's background read does not time out while the handler works.
func (g *bodyGuard) after(n int, err error) error {
	g.read += int64(n)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		return g.tooSlow()
	default:
		g.clearDeadline()
	}
	return err
}

func (g *bodyGuard) tooSlow() error {
	g.release()
	g.c.Response().Header().Set(echo.HeaderConnection, "close")
	if rate := g.budget.cfg.MinRate; rate > 0 {
		e := *errBodyTooSlow
		e.Message += "（每秒至少 " + strconv.FormatInt(rate, 10) + " 字节）"
		return &e
	}
	return errBodyTooSlow
}

func (g *bodyGuard) clearDeadline() {
	if g.deadline {
		g.deadline = false
		_ = http.NewResponseController(g.c.Response()).SetReadDeadline(time.Time{})
	}
}

// release returns the reservation; it is safe to call more than once.
func (g *bodyGuard) release() {
	if g.reserved > 0 {
		g.budget.unreserve(g.key, g.reserved)
		g.reserved = 0
	}
}

// IsBudgetRefusal reports whether err is the body budget's refusal (503
// SERVER_BUSY, 429 BODY_SHARE_EXCEEDED, 408 BODY_TOO_SLOW): the server's
// load, not the caller's mistake, so it is neither audited as a rejected
// request nor counted toward a limit of rejections.
func IsBudgetRefusal(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case CodeServerBusy, CodeBodyShareExceeded, CodeBodyTooSlow:
		return true
	}
	return false
}
