package accesslog

import (
	"log/slog"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/july/template/core/redaction"
)

// DefaultCaptureBytes is how much of each body is buffered for redaction by
// default: the server's default body limit, so every accepted JSON request
// is redacted whole before it is cut to the log limit.
const DefaultCaptureBytes = 1 << 20

// CodeRedactionFailed is the alert code logged when redaction fails.
const CodeRedactionFailed = "ACCESSLOG_REDACTION_FAILED"

// Redactor is what the access log needs from core/redaction;
// *redaction.Redactor implements it.
type Redactor interface {
	Summarise(p redaction.Policy, body redaction.Body) redaction.Result
	// RedactQueryFor redacts the query under the route's policy.
	RedactQueryFor(p redaction.Policy, safe *redaction.Fields, rawQuery string) string
	// RedactTextFor cleans a logged header (User-Agent, Referer) under the
	// route's policy: a Referer's query follows it as the query does.
	RedactTextFor(p redaction.Policy, safe *redaction.Fields, s string) string
	// RedactMessageFor cleans an error's cause or a panic's value under
	// the route's policy (httpx.SetMessageRedactor).
	RedactMessageFor(p redaction.Policy, safe *redaction.Fields, s string) string
}

var _ Redactor = (*redaction.Redactor)(nil)

// RoutePolicy is a route's body rule.
type RoutePolicy struct {
	// Policy picks the redaction rules; the zero value is PolicyDefault.
	Policy redaction.Policy
	// AllowText lets a PolicyDefault route log clean plain-text or XML bodies.
	AllowText bool
	// SecretParams names the route's path parameters that carry secrets
	// (a reset token, a signed id): their segments are logged as Redacted.
	SecretParams []string
	// Safe declares, on a default-deny policy (login, payment, callback,
	// file transfer), the fields whose values may be logged in the body,
	// the response, the query and the Referer, at any depth; every other
	// value is logged as its shape (type and length). Each entry is a
	// reviewed decision: list only fields that never hold a secret or
	// personal data (an order id, a channel, an amount).
	Safe []string
	// Correlate names fields logged as their shape plus a keyed hash of
	// the value (Redactor.HashKey), so equal values can be matched across
	// lines without being readable (an agent id).
	Correlate []string
}

// Route binds a route pattern (echo's c.Path(), e.g.
// "/api/v1/topups/:id") to its policy. Apps collect Routes from their domain
// modules (an fx value group) into Config.Routes.
type Route struct {
	Path string
	RoutePolicy
}

// Config configures New.
type Config struct {
	// Logger receives the "access" lines at INFO. Required.
	Logger *slog.Logger
	// Redactor redacts queries and bodies; its MaxBytes caps each logged
	// body after redaction. Default: a zero redaction.Redactor (50 KiB).
	// Production wiring should set one with a HashKey.
	Redactor Redactor
	// Routes maps an echo route pattern (c.Path(), e.g. "/api/v1/login")
	// to its policy. Unlisted routes use PolicyDefault.
	Routes map[string]RoutePolicy
	// CaptureBytes caps how much of each body is buffered before redaction.
	// A longer body is logged as a truncated Summary. Default:
	// DefaultCaptureBytes.
	CaptureBytes int
	// Failures counts redaction failures. Optional; see NewFailureCounter.
	Failures prometheus.Counter
	// UserIDFunc returns the authenticated user id (auth.UserID fits).
	// Optional; without it user_id is logged empty.
	UserIDFunc func(echo.Context) string
	// Skip, when it returns true, logs nothing for the request (e.g. probes).
	Skip func(echo.Context) bool
}

// NewFailureCounter returns the redaction-failure counter. Register it
// with the app's prometheus registry and pass it as Config.Failures.
func NewFailureCounter() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{
		Name: "accesslog_redaction_failures_total",
		Help: "Access-log bodies or queries that could not be redacted and were logged as a size summary only.",
	})
}
