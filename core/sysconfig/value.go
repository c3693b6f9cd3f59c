package sysconfig

import (
	"encoding/json"
	"log/slog"
)

// Mask replaces every sensitive (or unknown-sensitivity) value shown outside
// the package. It is fixed and never partial, so nothing of a secret leaks.
const Mask = "******"

// Value is a parsed, typed config value. Only Spec.Parse and Spec.ParseJSON
// make one, so it remembers its key's type and sensitivity: fmt (%v, %s, %#v)
// and slog print Mask for sensitive values. The zero value is an empty,
// untyped value.
type Value struct {
	key       string
	typ       Type
	sensitive bool
	text      string
	str       string
	num       int64
	flag      bool
	raw       json.RawMessage
}

// Key returns the key the value was parsed for.
func (v Value) Key() string { return v.key }

// Type returns the value type.
func (v Value) Type() Type { return v.typ }

// Text returns the stored textual form (canonical: ints without sign or
// leading zeros, bools as true/false, JSON compacted). It is unmasked: do
// not log it; use LogValue or MaskedText.
func (v Value) Text() string { return v.text }

// Str returns a string value; "" for other types.
func (v Value) Str() string { return v.str }

// Int returns an int value; 0 for other types.
func (v Value) Int() int64 { return v.num }

// Bool returns a bool value; false for other types.
func (v Value) Bool() bool { return v.flag }

// JSON returns a json value (compact); nil for other types. The slice is a
// copy.
func (v Value) JSON() json.RawMessage { return append(json.RawMessage(nil), v.raw...) }

// JSONValue returns the value as JSON of its type (a JSON string, number,
// bool or the raw JSON), as the HTTP API carries it. Unmasked.
func (v Value) JSONValue() json.RawMessage {
	switch v.typ {
	case TypeInt, TypeBool:
		return json.RawMessage(v.text)
	case TypeJSON:
		return v.JSON()
	}
	b, _ := json.Marshal(v.str) // a string always marshals
	return b
}

// Sensitive reports whether the value belongs to a sensitive key.
func (v Value) Sensitive() bool { return v.sensitive }

// String implements fmt.Stringer with the log-safe text.
func (v Value) String() string {
	if v.sensitive {
		return Mask
	}
	return v.text
}

// GoString implements fmt.GoStringer so %#v cannot print the fields.
func (v Value) GoString() string { return "sysconfig.Value(" + v.String() + ")" }

// LogValue implements slog.LogValuer: Mask for sensitive values.
func (v Value) LogValue() slog.Value { return slog.StringValue(v.String()) }

// MaskedText returns text as it may appear in views, audit records and logs:
// Mask when spec is nil (unregistered, sensitivity unknown) or sensitive,
// text otherwise.
func MaskedText(spec *Spec, text string) string {
	if spec == nil || spec.Sensitive {
		return Mask
	}
	return text
}
