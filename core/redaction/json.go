package redaction

import (
	"bytes"
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
