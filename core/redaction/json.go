package redaction

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

var redactedJSON = []byte(`"` + Redacted + `"`)

// unquote decodes a valid string literal.
func unquote(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s) // raw comes from a validated document
	return s
}

// topLevel validates data and returns the member names of a top-level
// object and the value of its event-type member, if any. It reports false,
// and nothing else, when data is not valid JSON (as json.Valid decides).
func topLevel(data []byte) (names []string, event string, ok bool) {
	rank := 0
	w := walker{in: data, top: func(key, value []byte) {
		name := unquote(key)
		names = append(names, name)
		if r := eventRank(name); r > rank && value[0] == '"' {
			event, rank = unquote(value), r
		}
	}}
	if !w.document(false) {
		return nil, "", false
	}
	return names, event, true
}

// eventRank orders the members that name a callback's event type:
// a specific event beats a generic message type.
func eventRank(name string) int {
	switch normalise(name) {
	case "event", "eventtype", "changetype":
		return 2
	case "msgtype", "type":
		return 1
	}
	return 0
}

// looksJSON reports text that may be a JSON object or array.
func looksJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[':
			return true
		}
		return false
	}
	return false
}

// appendQuoted appends s as a JSON string literal. Bytes of invalid UTF-8
// are copied as they are, as json.Valid allows.
func appendQuoted(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// valueHash is the first 12 hex digits of HMAC-SHA256(key, raw).
func valueHash(key, raw []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write(raw)
	var sum [sha256.Size]byte
	out := make([]byte, 12)
	hex.Encode(out, mac.Sum(sum[:0])[:6])
	return out
}

// upperSnake reports a string literal such as "LOGIN_FAILED": a result
// code, not a verification code.
func upperSnake(raw []byte) bool {
	letter := false
	for _, c := range raw[1 : len(raw)-1] {
		switch {
		case 'A' <= c && c <= 'Z':
			letter = true
		case c == '_' || c == '.' || isDigit(c):
		default:
			return false
		}
	}
	return letter
}
