package tracing

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/july/template/core/redaction"
)

// Redacting wraps exp so every span attribute, event attribute and status
// message passes the redactor before it leaves the process: a value under
// a sensitive key (password, token, ...) or shaped like a secret (a JWT, a
// bearer credential, a card number) is replaced with redaction.Redacted,
// free text (exception messages, status descriptions) is cleaned like a
// log line. The template's own spans carry ids only; this guards the
// spans a service adds.
func Redacting(exp sdktrace.SpanExporter) sdktrace.SpanExporter { return redacting{exp} }

type redacting struct{ sdktrace.SpanExporter }

func (r redacting) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, s := range spans {
		out[i] = redactedSpan{s}
	}
	return r.SpanExporter.ExportSpans(ctx, out)
}

// redactedSpan overrides the parts of a span that carry values.
type redactedSpan struct{ sdktrace.ReadOnlySpan }

var textRedactor = &redaction.Redactor{}

func (s redactedSpan) Attributes() []attribute.KeyValue {
	return redactAttrs(s.ReadOnlySpan.Attributes())
}

func (s redactedSpan) Events() []sdktrace.Event {
	evs := s.ReadOnlySpan.Events()
	out := make([]sdktrace.Event, len(evs))
	for i, e := range evs {
		e.Attributes = redactAttrs(e.Attributes)
		out[i] = e
	}
	return out
}

func (s redactedSpan) Links() []sdktrace.Link {
	ls := s.ReadOnlySpan.Links()
	out := make([]sdktrace.Link, len(ls))
	for i, l := range ls {
		l.Attributes = redactAttrs(l.Attributes)
		out[i] = l
	}
	return out
}

func (s redactedSpan) Status() sdktrace.Status {
	st := s.ReadOnlySpan.Status()
	st.Description = textRedactor.RedactText(st.Description)
	return st
}

// redactAttrs applies the log redactor's key and value rules to each
// string attribute; free-text keys are cleaned instead.
func redactAttrs(attrs []attribute.KeyValue) []attribute.KeyValue {
	var out []attribute.KeyValue
	for i, kv := range attrs {
		v := kv.Value
		var nv attribute.Value
		switch v.Type() {
		case attribute.STRING:
			nv = attribute.StringValue(redactString(string(kv.Key), v.AsString()))
		case attribute.STRINGSLICE:
			ss := v.AsStringSlice()
			for j := range ss {
				ss[j] = redactString(string(kv.Key), ss[j])
			}
			nv = attribute.StringSliceValue(ss)
		default:
			if !redaction.Default().IsSensitive(string(kv.Key)) {
				continue
			}
			nv = attribute.StringValue(redaction.Redacted)
		}
		if nv == v {
			continue
		}
		if out == nil {
			out = append([]attribute.KeyValue(nil), attrs...)
		}
		out[i] = attribute.KeyValue{Key: kv.Key, Value: nv}
	}
	if out == nil {
		return attrs
	}
	return out
}

func redactString(key, s string) string {
	if key == "exception.message" || key == "exception.stacktrace" {
		return textRedactor.RedactText(s)
	}
	return redaction.ReplaceAttr(nil, slog.String(key, s)).Value.String()
}
