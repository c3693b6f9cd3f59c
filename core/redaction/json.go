package redaction

import (
	"bytes"
	"encoding/json"
)

var redactedJSON = []byte(`"` + Redacted + `"`)

// scanner steps through a document that json.Valid has accepted, so it
// needs no error handling of its own. topLevel uses it; redactJSON uses the
// validating walker instead.
type scanner struct {
	in  []byte
	pos int
}

func (s *scanner) ws() {
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// str consumes a string literal at pos and returns it with its quotes.
func (s *scanner) str() []byte {
	start := s.pos
	s.pos++
	for {
		switch s.in[s.pos] {
		case '\\':
			s.pos += 2
		case '"':
			s.pos++
			return s.in[start:s.pos]
		default:
			s.pos++
		}
	}
}

// literal consumes a number, true, false or null and returns its text.
func (s *scanner) literal() []byte {
	start := s.pos
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return s.in[start:s.pos]
		}
		s.pos++
	}
	return s.in[start:s.pos]
}

// skip consumes one value of any type.
func (s *scanner) skip() {
	s.ws()
	switch s.in[s.pos] {
	case '"':
		s.str()
	case '{', '[':
		for depth := 0; ; {
			switch s.in[s.pos] {
			case '"':
				s.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.pos++
			if depth == 0 {
				return
			}
		}
	default:
		s.literal()
	}
}

// unquote decodes a valid string literal.
func unquote(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s) // raw comes from a validated document
	return s
}

// topLevel returns the member names of a top-level object and the value of
// its event-type member, if any. data must be valid JSON.
func topLevel(data []byte) (names []string, event string) {
	s := scanner{in: data}
	s.ws()
	if s.pos >= len(s.in) || s.in[s.pos] != '{' {
		return nil, ""
	}
	s.pos++
	rank := 0
	for {
		s.ws()
		if s.in[s.pos] == '}' {
			return names, event
		}
		name := unquote(s.str())
		names = append(names, name)
		s.ws()
		s.pos++ // ':'
		s.ws()
		if r := eventRank(name); r > rank && s.in[s.pos] == '"' {
			event, rank = unquote(s.str()), r
		} else {
			s.skip()
		}
		s.ws()
		if s.in[s.pos] == ',' {
			s.pos++
		}
	}
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
