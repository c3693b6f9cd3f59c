package outbox

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// MarshalPayload encodes v, which must be a struct, a non-nil pointer to a
// struct or a map with string keys, exactly once with encoding/json, and
// checks that the result is a JSON object of at most MaxPayloadBytes.
//
// Pre-encoded []byte, json.RawMessage and string values are refused, as are
// numbers, slices and nil: passing bytes is how a payload ends up marshalled
// twice into a Base64 string. Errors are *ValidationError with Field
// "payload" wrapping ErrPayloadNotStructured, ErrPayloadTooLarge or the
// encoding error.
func MarshalPayload(v any) (json.RawMessage, error) {
	if !structured(reflect.TypeOf(v)) {
		return nil, &ValidationError{Field: "payload", Reason: fmt.Sprintf("got %T; pass a struct or map[string]T, not pre-encoded json", v), Err: ErrPayloadNotStructured}
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return nil, &ValidationError{Field: "payload", Reason: fmt.Sprintf("got nil %T; pass a value", v), Err: ErrPayloadNotStructured}
	}
	b, err := json.Marshal(v)
	switch {
	case err != nil:
		return nil, &ValidationError{Field: "payload", Reason: "cannot be encoded as json; check field types", Err: err}
	case !isObject(b):
		return nil, &ValidationError{Field: "payload", Reason: fmt.Sprintf("%T encodes to %.20s, not a json object", v, b), Err: ErrPayloadNotStructured}
	case len(b) > MaxPayloadBytes:
		return nil, &ValidationError{Field: "payload", Reason: fmt.Sprintf("encodes to %d bytes, over the %d byte limit; carry ids, not whole objects", len(b), MaxPayloadBytes), Err: ErrPayloadTooLarge}
	}
	return b, nil
}

func structured(t reflect.Type) bool {
	if t == nil {
		return false
	}
	switch t.Kind() {
	case reflect.Struct:
		return true
	case reflect.Pointer:
		return t.Elem().Kind() == reflect.Struct
	case reflect.Map:
		return t.Key().Kind() == reflect.String
	}
	return false
}

// isObject reports whether b, ignoring leading JSON whitespace, starts an
// object. Callers pass valid JSON, so the first byte decides.
func isObject(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}
