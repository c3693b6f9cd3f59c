package redaction

import (
	"bytes"
	"strings"
)

// maxDepth is encoding/json's nesting limit: json.Valid rejects documents
// nested deeper, so redactJSON must too.
const maxDepth = 10000

// maxNest bounds how deep JSON documents inside strings are redacted.
const maxNest = 3

// redactJSON rewrites a JSON document with every sensitive value replaced.
// The output is compact; key order, duplicate keys and the exact text of
// numbers and non-secret strings are preserved, because values are copied
// byte for byte rather than decoded and re-encoded.
//
// It validates while it copies, in one pass, and accepts exactly what
// json.Valid accepts (FuzzRedactJSONValidity checks this): invalid UTF-8
// inside strings is allowed, as json.Valid allows it.
func redactJSON(data []byte, m matcher) (string, error) {
	out, err := redactJSONWith(walker{in: data, m: m})
	return string(out), err
}

func redactJSONWith(w walker) ([]byte, error) {
	w.out = make([]byte, 0, len(w.in)+16)
	w.leaves = w.m.deny()
	if !w.document(true) {
		return nil, ErrInvalidJSON
	}
	return w.out, nil
}

// walker validates a document and copies it to out, redacting as it goes.
// Every method returns false as soon as the input is not valid JSON; out is
// then discarded.
type walker struct {
	in    []byte
	pos   int
	depth int
	m     matcher
	out   []byte
	keys  keyCache
	// top, when set, is called with the raw key and value literals of each
	// member of a top-level object that is walked without emitting.
	top func(key, value []byte)

	hashKey    []byte // set: redacted values carry their keyed hash
	nest       int    // how deep in documents inside strings
	redactions int
	leaves     bool // default-deny: the value is under an undeclared member
	ident      bool // the value is under an allow-listed key
	code       bool // the value is under "code" in default-deny mode
	hash       bool // the value is under a correlated member
	cardCtx    bool // the value is under a card or bank member
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
			w.emitString(w.in[start:w.pos])
		}
		return true
	case 't', 'f':
		if emit && w.leaves {
			if !w.literal("true", false) && !w.literal("false", false) {
				return false
			}
			w.shape(w.in[start:w.pos])
			return true
		}
		if w.in[w.pos] == 't' {
			return w.literal("true", emit)
		}
		return w.literal("false", emit)
	case 'n':
		return w.literal("null", emit)
	}
	if !w.number() {
		return false
	}
	if emit {
		lit := w.in[start:w.pos]
		switch {
		case w.leaves:
			w.shape(lit)
		case !w.ident && numberSecret(lit):
			w.redact(lit)
		case !w.ident && len(lit) == 11 && phoneDigits(lit):
			w.out = appendMasked(w.out, lit, piiPhone)
		default:
			w.out = append(w.out, lit...)
		}
	}
	return true
}

// emitString copies a string literal, or its redaction: whole when it
// is or holds a credential, member by member when it is a JSON document.
func (w *walker) emitString(raw []byte) {
	if w.leaves {
		if w.code && upperSnake(raw) {
			w.out = append(w.out, raw...)
		} else {
			w.shape(raw)
		}
		return
	}
	if !mayBeSecret(raw) {
		w.out = append(w.out, raw...)
		return
	}
	s := unquote(raw)
	if w.m.credential(s, w.ident) {
		w.redact(raw)
		return
	}
	if !w.ident && phoneValue(s) {
		w.out = appendMasked(w.out, raw, piiPhone)
		return
	}
	if w.nest < maxNest && looksJSON(s) {
		sub := walker{in: []byte(s), m: w.m, hashKey: w.hashKey, nest: w.nest + 1}
		if out, err := redactJSONWith(sub); err == nil {
			// A hashed redaction reads [REDACTED:<hash>], so look for the
			// common prefix, not the plain marker.
			if bytes.Equal(out, sub.in) || !bytes.Contains(out, []byte(strings.TrimSuffix(Redacted, "]"))) {
				w.out = append(w.out, raw...)
			} else {
				w.redactions++
				w.out = appendQuoted(w.out, out)
			}
			return
		}
	}
	if w.m.textPair(s) {
		w.redact(raw)
		return
	}
	w.out = append(w.out, raw...)
}

// shape writes the default-deny replacement of an undeclared value: its
// type and length, and its keyed hash when the member is correlated.
func (w *walker) shape(raw []byte) {
	w.redactions++
	w.out = appendShape(w.out, raw, w.hash, w.m.hashKey)
}

// redact writes the replacement of the value literal raw.
func (w *walker) redact(raw []byte) {
	w.redactions++
	if w.hashKey == nil {
		w.out = append(w.out, redactedJSON...)
		return
	}
	w.out = append(w.out, `"`+Redacted[:len(Redacted)-1]+`:`...)
	w.out = append(w.out, valueHash(w.hashKey, raw)...)
	w.out = append(w.out, `]"`...)
}

// pairState tracks a {name, value} header object while it is copied.
type pairState struct {
	name             []byte // the name member's string literal, if any
	hasValue         bool
	valStart, valEnd int
	valRedacted      bool
}

// container consumes an object (keyed) or an array, recursing into members.
// An array [name, value] whose name is sensitive loses its value, and so
// does an object {"name": name, "value": value}.
func (w *walker) container(end byte, keyed, emit bool) bool {
	if w.depth++; w.depth > maxDepth {
		return false
	}
	w.pos++ // '{' or '['
	if emit {
		w.out = append(w.out, w.in[w.pos-1])
	}
	w.ws()
	if w.pos < len(w.in) && w.in[w.pos] == end {
		w.pos++
		if emit {
			w.out = append(w.out, end)
		}
		w.depth--
		return true
	}
	var pair pairState
	headerName := false
	for i := 0; ; i++ {
		if keyed {
			if !w.member(emit, &pair) {
				return false
			}
		} else {
			w.ws()
			start := w.pos
			if i == 1 && headerName && emit {
				if !w.value(false) {
					return false
				}
				w.redact(w.in[start:w.pos])
			} else if !w.value(emit) {
				return false
			}
			if i == 0 && emit && w.in[start] == '"' && w.pos-start >= 5 {
				headerName = w.m.sensitive(literalText(w.in[start:w.pos]))
			}
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
		if c == end {
			if pair.name != nil && pair.hasValue && !pair.valRedacted && w.m.sensitive(literalText(pair.name)) {
				w.spliceRedacted(pair.valStart, pair.valEnd)
			}
			if emit {
				w.out = append(w.out, c)
			}
			w.depth--
			return true
		}
		if emit {
			w.out = append(w.out, c)
		}
	}
}

// literalText is a string literal's text, without copying when it has no escapes.
func literalText(raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	return []byte(unquote(raw))
}

// spliceRedacted replaces out[start:end] by its redaction.
func (w *walker) spliceRedacted(start, end int) {
	tail := append([]byte(nil), w.out[end:]...)
	val := append([]byte(nil), w.out[start:end]...)
	w.out = w.out[:start]
	w.redact(val)
	w.out = append(w.out, tail...)
}

// member consumes one "key":value pair of an object.
func (w *walker) member(emit bool, pair *pairState) bool {
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
	f := w.keyFlags(start, end)
	if f&flagIdentKey != 0 || f&flagDigitsKey != 0 && w.cardCtx {
		// A member name shaped like a secret or an identity is a value.
		w.redactions++
		w.out = append(w.out, redactedJSON...)
	} else {
		w.out = append(w.out, key...)
	}
	w.out = append(w.out, ':')
	w.ws()
	v := w.pos
	if w.m.deny() && f&flagCode != 0 {
		f = f&^flagSensitive&^flagKept | flagCode // only a result code's name stays
	}
	if f&flagSensitive != 0 {
		if !w.value(false) {
			return false
		}
		w.redact(w.in[v:w.pos])
		if f&flagValue != 0 {
			pair.hasValue, pair.valRedacted = true, true
		}
		return true
	}
	if pii := piiOf(f); pii != 0 && !w.m.deny() && w.pos < len(w.in) && (w.in[v] == '"' || isDigit(w.in[v])) {
		if !w.value(false) {
			return false
		}
		w.redactions++
		w.out = appendMasked(w.out, w.in[v:w.pos], pii)
		return true
	}
	ident, leaves, code, hash, cardCtx := w.ident, w.leaves, w.code, w.hash, w.cardCtx
	w.ident = f&flagAllowed != 0
	w.code = f&flagCode != 0
	w.hash = f&flagHash != 0
	w.cardCtx = f&flagCardCtx != 0
	if w.m.deny() {
		// Each member is judged by its own name, at any depth.
		w.leaves = f&flagKept == 0 || w.hash || w.code
	}
	outStart, before := len(w.out), w.redactions
	ok := w.value(true)
	w.ident, w.leaves, w.code, w.hash, w.cardCtx = ident, leaves, code, hash, cardCtx
	switch {
	case !ok:
		return false
	case f&flagName != 0 && w.in[v] == '"':
		pair.name = w.in[v:w.pos]
	case f&flagValue != 0:
		pair.hasValue, pair.valStart, pair.valEnd = true, outStart, len(w.out)
		pair.valRedacted = w.redactions > before && w.in[v] == '"'
	}
	return true
}

// Key flags, memoised per document.
const (
	flagSensitive = 1 << iota
	flagAllowed
	flagKept      // default-deny: a declared member that keeps its value
	flagCode      // default-deny: "code", kept when it is a result code
	flagName      // "name" of a {name, value} header object
	flagValue     // "value" of one
	flagKnown     // the entry is filled
	flagHash      // default-deny: a correlated member
	flagIdentKey  // the name is a JWT, card, ID or phone number
	flagDigitsKey // the name is 12-19 digits: a card number in a card context
	flagCardCtx   // the name is a card or bank member
	flagPIIPhone  // PII: a phone number, masked to its last 4 digits
	flagPIIName   // PII: a person's name, masked to its first character
	flagPIIID     // PII: an openid or unionid, masked to its last 4 characters
)

// keyFlags classifies the raw key literal in[start:end]. Keys repeat in
// arrays of objects, so answers are memoised for the document.
func (w *walker) keyFlags(start, end int) uint16 {
	raw := w.in[start:end]
	e := w.keys.slot(raw)
	if e.end != 0 && bytes.Equal(w.in[e.off:e.end], raw) {
		return e.flags
	}
	k := raw[1 : len(raw)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		k = []byte(unquote(raw))
	}
	sensitive, allowed := w.m.lookup(k)
	f := uint16(flagKnown) | nameFlags(k)
	if sensitive {
		f |= flagSensitive
	}
	if allowed {
		f |= flagAllowed
	}
	switch string(k) {
	case "name", "header", "field", "Name", "Header":
		f |= flagName
	case "value", "val", "Value":
		f |= flagValue
	}
	if w.m.deny() {
		n := normalise(string(k))
		switch w.m.fieldClass(n) {
		case fieldSafe:
			f |= flagKept
		case fieldHash:
			f |= flagHash
		}
		if n == "code" && !w.m.login {
			f |= flagCode
		}
	}
	e.off, e.end, e.flags = start, end, f
	return f
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
		w.out = append(w.out, lit...)
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
