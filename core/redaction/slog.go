package redaction

import "log/slog"

// Secret is a string that never appears in logs: it logs as Redacted.
type Secret string

// LogValue implements slog.LogValuer.
func (Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }

// String keeps a Secret out of fmt output too.
func (Secret) String() string { return Redacted }

// Clean is text a Redactor already produced under a route's Policy, such
// as an access line's body (Result.Text). Log it with slog.Any: ReplaceAttr
// still checks its key and groups, but does not read its value again under
// PolicyDefault, which would undo the route's policy (a config listing's
// "key" members are config key names, readable under PolicyConfig and a
// secret's name under PolicyDefault, so the whole body would log as
// Redacted). It deliberately has no LogValue method: slog resolves
// LogValuers before ReplaceAttr sees them.
type Clean string

// ErrorKey is the one key a log line carries an error under.
const ErrorKey = "error"

var errorRedactor = &Redactor{}

// ReplaceAttr is a slog.HandlerOptions.ReplaceAttr for root handlers. It
// redacts an attribute whose key, or any enclosing group's name, is in the
// Default registry, and any string value that is a credential (bearer token,
// JWT, signed URL). Structured bodies should still go through a Redactor,
// whose output is logged as Clean and kept as it is.
//
// Errors are logged under one key, ErrorKey, and always as redacted text:
// an error value under any key, and a string under ErrorKey, pass
// RedactText (an error's text may quote a DSN, a header or a value from a
// constraint message), so the message stays useful and its secrets go.
func ReplaceAttr(groups []string, a slog.Attr) slog.Attr {
	m := defaultRegistry.matcher(PolicyDefault)
	redact := m.sensitive([]byte(a.Key))
	for _, g := range groups {
		redact = redact || m.sensitive([]byte(g))
	}
	if !redact && a.Value.Kind() == slog.KindAny {
		if err, ok := a.Value.Any().(error); ok && err != nil {
			a.Value = slog.StringValue(errorRedactor.RedactText(err.Error()))
		}
	} else if !redact && a.Key == ErrorKey && a.Value.Kind() == slog.KindString {
		a.Value = slog.StringValue(errorRedactor.RedactText(a.Value.String()))
	}
	if !redact && a.Value.Kind() == slog.KindString {
		redact = m.secretValue(a.Value.String())
	}
	if redact {
		a.Value = slog.StringValue(Redacted)
	}
	return a
}
