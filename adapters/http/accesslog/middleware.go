package accesslog

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/redaction"
)

// logger is the configured middleware.
type logger struct {
	Config
	fields map[string]*redaction.Fields // each route's declared safe set
}

// New returns the access-log middleware. Install it after
// httpx.RequestIDs and before httpx.Recover (httpx.ServerConfig.Middleware
// does both), so it sees every request with its id and final status.
//
// When the handler returns an error, the middleware passes it to the
// server's error handler itself, to log the status actually sent, and then
// returns nil.
func New(cfg Config) echo.MiddlewareFunc {
	l := &logger{Config: cfg}
	if l.Logger == nil {
		panic("accesslog: Config.Logger is required")
	}
	if l.Redactor == nil {
		l.Redactor = &redaction.Redactor{}
	}
	l.CaptureBytes = cmp.Or(l.CaptureBytes, DefaultCaptureBytes)
	l.fields = make(map[string]*redaction.Fields, len(l.Routes))
	for path, p := range l.Routes {
		if len(p.Safe)+len(p.Correlate) > 0 {
			l.fields[path] = redaction.NewFields(p.Safe, p.Correlate)
		}
	}
	return l.middleware
}

func (l *logger) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if l.Skip != nil && l.Skip(c) {
			return next(c)
		}
		start := time.Now()
		// The error handler and Recover log the cause and the panic under
		// the route's policy too.
		policy, safe := l.Routes[c.Path()], l.fields[c.Path()]
		httpx.SetMessageRedactor(c, func(s string) string {
			out, ok := l.redact(func(s string) string { return l.Redactor.RedactMessageFor(policy.Policy, safe, s) }, s)
			if !ok {
				l.alert(c.Request().Context(), c, "message")
				return redaction.Redacted
			}
			return out
		})
		r := c.Request()
		var tap *requestTap
		if r.Body != nil && r.Body != http.NoBody {
			tap = &requestTap{rc: r.Body, c: c, buffer: buffer{limit: l.CaptureBytes, keep: loggable(r.Header.Get("Content-Type"))}}
			r.Body = tap
		}
		rec := &recorder{ResponseWriter: c.Response().Writer, buffer: buffer{limit: l.CaptureBytes}}
		c.Response().Writer = rec

		if err := next(c); err != nil {
			c.Error(err)
		}
		l.log(c, time.Since(start), tap, rec)
		rec.release()
		if tap != nil {
			tap.release()
		}
		return nil
	}
}

// log writes the access line. c.Request() is re-read: inner middleware
// (auth) may have replaced the request with one carrying more context.
func (l *logger) log(c echo.Context, latency time.Duration, tap *requestTap, rec *recorder) {
	r := c.Request()
	ctx := r.Context()
	policy := l.Routes[c.Path()]
	userID := ""
	if l.UserIDFunc != nil {
		userID = l.UserIDFunc(c)
	}
	// The route's policy everywhere the request shows up: query and
	// headers too, not only the bodies.
	safe := l.fields[c.Path()]
	query, ok := l.redact(func(s string) string { return l.Redactor.RedactQueryFor(policy.Policy, safe, s) }, r.URL.RawQuery)
	if !ok {
		l.alert(ctx, c, "query")
	}
	text := func(s string) string { return l.Redactor.RedactTextFor(policy.Policy, safe, s) }
	ua, ok := l.redact(text, r.UserAgent())
	if !ok {
		l.alert(ctx, c, "user_agent")
	}
	referer, ok := l.redact(text, r.Referer())
	if !ok {
		l.alert(ctx, c, "referer")
	}
	l.Logger.LogAttrs(ctx, slog.LevelInfo, "access",
		slog.String("request_id", httpx.RequestID(ctx)),
		slog.String("method", r.Method),
		slog.String("route", c.Path()),
		slog.String("path", secretSegments(c.Path(), r.URL.Path, policy.SecretParams)),
		slog.String("query", query),
		slog.Int("status", c.Response().Status),
		slog.Float64("latency_ms", float64(latency.Microseconds())/1000),
		slog.String("ip", c.RealIP()),
		slog.String("user_agent", ua),
		slog.String("referer", referer),
		slog.String("user_id", userID),
		l.body(c, "req", policy, safe, requestBody(c, r, tap)),
		l.body(c, "resp", policy, safe, responseBody(c.Response().Header(), rec)),
	)
}

// secretSegments replaces the path segments that match the route's
// secret parameters (":token" in "/reset/:token") by Redacted.
func secretSegments(route, path string, secret []string) string {
	if len(secret) == 0 {
		return path
	}
	rs, ps := strings.Split(route, "/"), strings.Split(path, "/")
	for i, seg := range rs {
		if i >= len(ps) {
			break
		}
		if name, ok := strings.CutPrefix(seg, ":"); ok && slices.Contains(secret, name) {
			ps[i] = redaction.Redacted
		}
		if seg == "*" && slices.Contains(secret, "*") {
			return strings.Join(append(ps[:i], redaction.Redacted), "/")
		}
	}
	return strings.Join(ps, "/")
}

// captured is one body as observed, before redaction.
type captured struct {
	body redaction.Body
	size int64 // bytes that passed, or the declared length if more
}

func requestBody(c echo.Context, r *http.Request, tap *requestTap) captured {
	ct := r.Header.Get("Content-Type")
	if tap == nil {
		return captured{body: redaction.Body{ContentType: ct}}
	}
	size := max(tap.n, r.ContentLength)
	data, cut := tap.data, tap.cut(size)
	if shared, ok := httpx.SharedBody(c); ok && tap.keep && len(tap.data) == 0 {
		// Read by httpx.ReadBody: log the shared bytes, capped as a copy would be.
		data = shared[:min(len(shared), tap.limit)]
		cut = int64(len(data)) < size
	}
	b := redaction.Body{ContentType: ct, Data: data, Truncated: cut}
	if r.MultipartForm != nil {
		b.Parts = parts(r)
	}
	return captured{body: b, size: size}
}

func responseBody(h http.Header, rec *recorder) captured {
	return captured{
		body: redaction.Body{ContentType: h.Get("Content-Type"), Data: rec.data, Truncated: rec.cut(rec.n), Response: true},
		size: rec.n,
	}
}

// body redacts one body into a log group. A body that passed but was not
// buffered (binary, multipart the handler did not parse, unread) is logged
// as its type and size only.
func (l *logger) body(c echo.Context, name string, p RoutePolicy, safe *redaction.Fields, cb captured) slog.Attr {
	var res redaction.Result
	switch {
	case len(cb.body.Data) == 0 && len(cb.body.Parts) == 0 && cb.size == 0:
		res = redaction.Result{Mode: redaction.ModeOmitted}
	case len(cb.body.Data) == 0 && len(cb.body.Parts) == 0:
		res = sizeOnly(cb)
	default:
		var ok bool
		cb.body.AllowText, cb.body.Safe = p.AllowText, safe
		if res, ok = l.summarise(p.Policy, cb.body); !ok {
			l.alert(c.Request().Context(), c, name)
			res = sizeOnly(cb)
		}
	}
	// []slog.Attr, not slog.Group's ...any: boxing each Attr in an
	// interface would cost an allocation per field on every request.
	attrs := make([]slog.Attr, 3, 5)
	attrs[0] = slog.String("mode", string(res.Mode))
	attrs[1] = slog.Int64("size", cb.size)
	attrs[2] = slog.Bool("truncated", res.Truncated)
	if res.Text != "" {
		// Clean: redacted under the route's policy, so the root logger's
		// redaction.ReplaceAttr keeps it (PolicyConfig's key names).
		attrs = append(attrs, slog.Any("text", redaction.Clean(res.Text)))
	}
	if res.Summary != nil {
		attrs = append(attrs, slog.Any("summary", res.Summary))
	}
	return slog.Attr{Key: name, Value: slog.GroupValue(attrs...)}
}

// sizeOnly describes a body by its media type and size: nothing of its
// content, so nothing in it can have been cut either.
func sizeOnly(cb captured) redaction.Result {
	s := &redaction.Summary{ContentType: mediaType(cb.body.ContentType), Size: int(cb.size)}
	return redaction.Result{Mode: redaction.ModeSummary, Summary: s}
}

var errBadResult = errors.New("accesslog: redactor returned an inconsistent result")

// summarise runs the redactor, treating a panic or an inconsistent result
// as a failure, so a redactor bug can never put a raw body in the log.
func (l *logger) summarise(p redaction.Policy, b redaction.Body) (res redaction.Result, ok bool) {
	defer func() {
		if recover() != nil {
			res, ok = redaction.Result{}, false
		}
	}()
	res = l.Redactor.Summarise(p, b)
	return res, checkResult(res) == nil
}

func checkResult(res redaction.Result) error {
	switch res.Mode {
	case redaction.ModeJSON, redaction.ModeForm, redaction.ModeText:
		if res.Summary == nil {
			return nil
		}
	case redaction.ModeSummary:
		if res.Summary != nil && res.Text == "" {
			return nil
		}
	case redaction.ModeOmitted:
		if res.Text == "" {
			return nil
		}
	}
	return errBadResult
}

// redact runs one of the redactor's text functions, treating a panic as
// a failure: the part is then logged empty.
func (l *logger) redact(f func(string) string, raw string) (out string, ok bool) {
	if raw == "" {
		return "", true
	}
	defer func() {
		if recover() != nil {
			out, ok = "", false
		}
	}()
	return f(raw), true
}

// alert logs the safe redaction-failure line and counts it. It names the
// request and the failed part, never the content or the panic value.
func (l *logger) alert(ctx context.Context, c echo.Context, part string) {
	if l.Failures != nil {
		l.Failures.Inc()
	}
	l.Logger.LogAttrs(ctx, slog.LevelWarn, "access log redaction failed",
		slog.String("code", CodeRedactionFailed),
		slog.String("component", "accesslog"),
		slog.String("request_id", httpx.RequestID(ctx)),
		slog.String("route", c.Path()),
		slog.String("path", c.Request().URL.Path),
		slog.String("part", part),
		slog.String("action", "访问日志脱敏失败：该部分只记录了类型和大小；请检查脱敏器与该路由的策略"),
	)
}
