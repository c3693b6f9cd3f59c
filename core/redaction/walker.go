package redaction

import (
	"bytes"
	"strings"
)

// maxDepth is encoding/json's nesting limit: json.Valid rejects documents
// nested deeper, so redactJSON must too.
const maxDepth = 10000

// redactJSON rewrites a JSON document with every sensitive value replaced.
// The output is compact; key order, duplicate keys and the exact text of
// numbers and non-secret strings are preserved, because values are copied
// byte for byte rather than decoded and re-encoded.
//
// It validates while it copies, in one pass, and accepts exactly what
// json.Valid accepts (FuzzRedactJSONValidity checks this): invalid UTF-8
// inside strings is allowed, as json.Valid allows it.
func redactJSON(data []byte, m matcher) (string, error) {
	w := walker{in: data, m: m}
	w.out.Grow(len(data))
	if !w.document(true) {
		return "", ErrInvalidJSON
	}
	return w.out.String(), nil
}

// walker validates a document and copies it to out, redacting as it goes.
// Every method returns false as soon as the input is not valid JSON; out is
// then discarded.
type walker struct {
	in    []byte
	pos   int
	depth int
	m     matcher
	out   strings.Builder
	keys  keyCache
	// top, when set, is called with the raw key and value literals of each
	// member of a top-level object that is walked without emitting.
	top func(key, value []byte)
}

// document consumes exactly one value and trailing whitespace.
func (w *walker) document(emit bool) bool {
	if !w.value(emit) {
		return false
	}
	w.ws()
	return w.pos == len(w.in)
}

func (w *walker) ws() {
	for w.pos < len(w.in) {
		switch w.in[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

// value consumes one value, copying it to out when emit is set. A value
// under a sensitive key is consumed with emit unset: it is still validated.
func (w *walker) value(emit bool) bool {
	w.ws()
	if w.pos >= len(w.in) {
		return false
	}
	start := w.pos
	switch w.in[w.pos] {
	case '{':
		return w.container('}', true, emit)
	case '[':
		return w.container(']', false, emit)
	case '"':
		if !w.str() {
			return false
		}
		if emit {
			raw := w.in[start:w.pos]
			if mayBeSecret(raw) && w.m.secretValue(unquote(raw)) {
				raw = redactedJSON
			}
			w.out.Write(raw)
		}
		return true
	case 't':
		return w.literal("true", emit)
	case 'f':
		return w.literal("false", emit)
	case 'n':
		return w.literal("null", emit)
	}
	if !w.number() {
		return false
	}
	if emit {
		w.out.Write(w.in[start:w.pos])
	}
	return true
}

// container consumes an object (keyed) or an array, recursing into members.
func (w *walker) container(end byte, keyed, emit bool) bool {
	if w.depth++; w.depth > maxDepth {
		return false
	}
	w.pos++ // '{' or '['
	if emit {
		w.out.WriteByte(w.in[w.pos-1])
	}
	w.ws()
	if w.pos < len(w.in) && w.in[w.pos] == end {
		w.pos++
		if emit {
			w.out.WriteByte(end)
		}
		w.depth--
		return true
	}
	for {
		if keyed {
			if !w.member(emit) {
				return false
			}
		} else if !w.value(emit) {
			return false
		}
		w.ws()
		if w.pos >= len(w.in) {
			return false
		}
		c := w.in[w.pos]
		if c != ',' && c != end {
			return false
		}
		w.pos++
		if emit {
			w.out.WriteByte(c)
		}
		if c == end {
			w.depth--
			return true
		}
	}
}

// member consumes one "key":value pair of an object.
func (w *walker) member(emit bool) bool {
	w.ws()
	start := w.pos
	if w.pos >= len(w.in) || w.in[w.pos] != '"' || !w.str() {
		return false
	}
	key, end := w.in[start:w.pos], w.pos
	w.ws()
	if w.pos >= len(w.in) || w.in[w.pos] != ':' {
		return false
	}
	w.pos++
	if !emit {
		if w.top == nil || w.depth != 1 {
			return w.value(false)
		}
		w.ws()
		v := w.pos
		if !w.value(false) {
			return false
		}
		w.top(key, w.in[v:w.pos])
		return true
	}
	w.out.Write(key)
	w.out.WriteByte(':')
	if !w.keySensitive(start, end) {
		return w.value(true)
	}
	if !w.value(false) {
		return false
	}
	w.out.Write(redactedJSON)
	return true
}

// keySensitive reports whether the raw key literal in[start:end] is
// sensitive. Keys repeat in arrays of objects, so answers are memoised for
// the document.
func (w *walker) keySensitive(start, end int) bool {
	raw := w.in[start:end]
	e := w.keys.slot(raw)
	if e.end != 0 && bytes.Equal(w.in[e.off:e.end], raw) {
		return e.sensitive
	}
	var sensitive bool
	if bytes.IndexByte(raw, '\\') >= 0 {
		sensitive = w.m.sensitive([]byte(unquote(raw)))
	} else {
		sensitive = w.m.sensitive(raw[1 : len(raw)-1])
	}
	e.off, e.end, e.sensitive = start, end, sensitive
	return sensitive
}

// str consumes a string literal at pos, checking its escapes and that it
// holds no control characters.
func (w *walker) str() bool {
	in, i := w.in, w.pos+1
	for {
		for i < len(in) && strPlain[in[i]] {
			i++
		}
		if i >= len(in) {
			return false
		}
		switch in[i] {
		case '"':
			w.pos = i + 1
			return true
		case '\\':
			i++
			if i >= len(in) {
				return false
			}
			switch in[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+4 >= len(in) || !isHex(in[i+1]) || !isHex(in[i+2]) || !isHex(in[i+3]) || !isHex(in[i+4]) {
					return false
				}
				i += 5
			default:
				return false
			}
		default: // a control character
			return false
		}
	}
}

// strPlain marks the bytes a string literal holds without ceremony: all but
// the quote, the backslash and control characters. Bytes of invalid UTF-8
// are plain, as they are to json.Valid.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// literal consumes true, false or null.
func (w *walker) literal(lit string, emit bool) bool {
	if len(w.in)-w.pos < len(lit) || string(w.in[w.pos:w.pos+len(lit)]) != lit {
		return false
	}
	w.pos += len(lit)
	if emit {
		w.out.WriteString(lit)
	}
	return true
}

// number consumes a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (w *walker) number() bool {
	in, i := w.in, w.pos
	if i < len(in) && in[i] == '-' {
		i++
	}
	switch {
	case i >= len(in):
		return false
	case in[i] == '0':
		i++
	case '1' <= in[i] && in[i] <= '9':
		i = digits(in, i+1)
	default:
		return false
	}
	if i < len(in) && in[i] == '.' {
		if i++; i >= len(in) || !isDigit(in[i]) {
			return false
		}
		i = digits(in, i+1)
	}
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		if i++; i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		if i >= len(in) || !isDigit(in[i]) {
			return false
		}
		i = digits(in, i+1)
	}
	w.pos = i
	return true
}

// digits returns the index of the first non-digit at or after i.
func digits(in []byte, i int) int {
	for i < len(in) && isDigit(in[i]) {
		i++
	}
	return i
}
