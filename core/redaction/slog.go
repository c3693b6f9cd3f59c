package redaction

import "log/slog"

// Secret is a string that never appears in logs: it logs as Redacted.
type Secret string

// LogValue implements slog.LogValuer.
func (Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }

// String keeps a Secret out of fmt output too.
func (Secret) String() string { return Redacted }

// ReplaceAttr is a slog.HandlerOptions.ReplaceAttr for root handlers. It
// redacts an attribute whose key, or any enclosing group's name, is in the
// Default registry, and any string value that is a credential (bearer token,
// JWT, signed URL). Structured bodies should still go through a Redactor.
func ReplaceAttr(groups []string, a slog.Attr) slog.Attr {
	m := defaultRegistry.matcher(PolicyDefault)
	redact := m.sensitive([]byte(a.Key))
	for _, g := range groups {
		redact = redact || m.sensitive([]byte(g))
	}
	if !redact && a.Value.Kind() == slog.KindString {
		redact = m.secretValue(a.Value.String())
	}
	if redact {
		a.Value = slog.StringValue(Redacted)
	}
	return a
}
