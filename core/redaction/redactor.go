package redaction

import (
	"cmp"
	"errors"
	"strings"
	"unicode/utf8"
)

// Redacted replaces every sensitive value. It is a constant so that nothing
// about the original (length, prefix, type) survives.
const Redacted = "[REDACTED]"

// DefaultMaxBytes is the default value of Redactor.MaxBytes: an access-log
// line carries at most 50KB of body, so one request cannot flood the log.
const DefaultMaxBytes = 50 * 1024

// ErrInvalidJSON is returned by RedactJSON for input that is not one valid
// JSON document. It never carries any of the input; log a Summary instead.
var ErrInvalidJSON = errors.New("redaction: body is not valid json, log its summary instead")

// Mode says what Result.Text or Result.Summary holds.
type Mode string

// Modes of a Result.
const (
	ModeJSON    Mode = "json"    // Text is the redacted JSON document, compacted
	ModeForm    Mode = "form"    // Text is the redacted form body
	ModeText    Mode = "text"    // Text is plain text a route allowed and that looked clean
	ModeSummary Mode = "summary" // Text is empty; Summary describes the body
	ModeOmitted Mode = "omitted" // the body was empty; nothing to log
)

// Redactor redacts access-log data. The zero value is ready to use; it is
// safe for concurrent use and must not be modified once in use.
type Redactor struct {
	// Registry decides which keys are sensitive. Default: Default().
	Registry *Registry
	// MaxBytes caps Result.Text, applied after redaction. Default: DefaultMaxBytes.
	MaxBytes int
	// HashKey keys Summary.HMAC. Set it (from a secret, per deployment): with
	// the built-in fallback key, the hash of a short body such as a 6-digit
	// code can be reversed by trying every candidate.
	HashKey []byte
	// HashRedacted, with a HashKey, replaces each redacted value by
	// "[REDACTED:<12 hex digits of its keyed hash>]", so equal secrets can
	// be correlated across lines without being readable.
	HashRedacted bool
}

// Result is what an access log writes for one body.
type Result struct {
	// Text is the redacted, capped body; empty in summary and omitted modes.
	Text string
	// Summary describes the body when its content may not be logged.
	Summary *Summary
	// Truncated is true when Text was cut at MaxBytes, or when the caller
	// captured only a prefix of the body (Body.Truncated).
	Truncated bool
	// Mode says which of Text and Summary is set.
	Mode Mode
}

// RedactJSON redacts a JSON document under the Default policy: every value
// under a sensitive key, at any depth in objects and arrays, and every string
// value that is a credential or a signed URL, becomes Redacted. The output is
// compact JSON with key order and number text preserved, capped at MaxBytes.
// It returns ErrInvalidJSON, and no Text, for anything else.
func (r *Redactor) RedactJSON(data []byte) (Result, error) {
	out, err := redactJSONWith(r.walker(data, PolicyDefault, nil))
	if err != nil {
		return Result{}, err
	}
	return r.text(string(out), ModeJSON), nil
}

func (r *Redactor) matcher(p Policy) matcher {
	return r.matcherFor(p, nil)
}

// matcherFor is matcher with a route's declared safe fields.
func (r *Redactor) matcherFor(p Policy, safe *Fields) matcher {
	m := cmp.Or(r.Registry, defaultRegistry).matcher(p)
	m.safe, m.hashKey, m.login = safe, r.HashKey, p == PolicyLogin
	return m
}

// walker returns a walker over data under policy p with the route's
// declared safe fields.
func (r *Redactor) walker(data []byte, p Policy, safe *Fields) walker {
	w := walker{in: data, m: r.matcherFor(p, safe)}
	if r.HashRedacted && len(r.HashKey) > 0 {
		w.hashKey = r.HashKey
	}
	return w
}

// text caps redacted text at MaxBytes on a UTF-8 boundary.
func (r *Redactor) text(s string, mode Mode) Result {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	limit := cmp.Or(r.MaxBytes, DefaultMaxBytes)
	if len(s) <= limit {
		return Result{Text: s, Mode: mode}
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return Result{Text: s[:cut], Truncated: true, Mode: mode}
}
