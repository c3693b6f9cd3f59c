package redaction

import "strings"

// redactPairs redacts a list of key=value pairs (a URL query or a form
// body) separated by '&' or ';': Go's server drops pairs after a ';', but
// other servers and proxies split there. It keeps pair order, separators
// and the original encoding of everything it does not redact, and never
// fails: undecodable text is matched as it stands.
func redactPairs(raw string, m matcher) string {
	var b strings.Builder
	b.Grow(len(raw))
	for {
		end := strings.IndexAny(raw, "&;")
		if end < 0 {
			end = len(raw)
		}
		pair := raw[:end]
		k, v, hasValue := strings.Cut(pair, "=")
		key := unescape(k)
		switch {
		case m.secretValue(key):
			// A bare credential (?eyJ...) has no key to keep.
			b.WriteString(Redacted)
		case hasValue && (m.sensitive([]byte(key)) || m.secretValue(unescape(v))):
			b.WriteString(k)
			b.WriteString("=" + Redacted)
		default:
			b.WriteString(pair)
		}
		if end == len(raw) {
			break
		}
		b.WriteByte(raw[end])
		raw = raw[end+1:]
		if raw == "" {
			return b.String() // a trailing separator
		}
	}
	return b.String()
}

// RedactQuery returns a URL's raw query with the value of every sensitive
// parameter, and every value that is itself a credential or a signed URL,
// replaced by Redacted. It is tolerant of malformed encoding and is not
// capped: URL length is bounded by the server.
func (r *Redactor) RedactQuery(rawQuery string) string {
	return redactPairs(rawQuery, r.matcher(PolicyDefault))
}

// RedactForm redacts an application/x-www-form-urlencoded body like
// RedactQuery, then caps it at MaxBytes.
func (r *Redactor) RedactForm(data []byte) Result {
	return r.text(redactPairs(string(data), r.matcher(PolicyDefault)), ModeForm)
}

// RedactHeaders returns a copy of h in which every value of a sensitive
// header (Authorization, Cookie, X-Api-Key, ...) and every value that is a
// credential is Redacted. It accepts an http.Header directly.
func (r *Redactor) RedactHeaders(h map[string][]string) map[string][]string {
	m := r.matcher(PolicyDefault)
	out := make(map[string][]string, len(h))
	for k, vs := range h {
		sensitive := m.sensitive([]byte(k))
		cp := make([]string, len(vs))
		for i, v := range vs {
			cp[i] = v
			if sensitive || m.secretValue(v) {
				cp[i] = Redacted
			}
		}
		out[k] = cp
	}
	return out
}
