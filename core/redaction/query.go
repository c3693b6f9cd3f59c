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
		case m.secretValue(key) || nameFlags([]byte(key))&flagIdentKey != 0:
			// A bare credential (?eyJ...) has no key to keep.
			b.WriteString(Redacted)
		case m.deny() && hasValue:
			b.WriteString(k)
			b.WriteString("=")
			b.WriteString(m.denyPair(key, v))
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

// denyPair returns what a default-deny policy logs for the value v
// (still encoded) of the pair named key: v itself when the field is
// declared safe and holds no secret, its shape otherwise.
func (m matcher) denyPair(key, v string) string {
	n := normalise(key)
	class := m.fieldClass(n)
	uv := unescape(v)
	switch {
	case m.sensitive([]byte(key)) && (n != "code" || m.login):
		return Redacted
	case m.secretValue(uv):
		class = 0
	case n == "code" && upperSnake(appendQuoted(nil, []byte(uv))):
		return v
	}
	if class == fieldSafe {
		return v
	}
	return shapeText(uv, class == fieldHash, m.hashKey)
}

// RedactQueryFor redacts a raw query under a route's policy p and
// declared safe fields: on a default-deny policy every parameter not
// declared safe is logged as its shape.
func (r *Redactor) RedactQueryFor(p Policy, safe *Fields, rawQuery string) string {
	return redactPairs(rawQuery, r.matcherFor(p, safe))
}

// RedactTextFor is RedactText under a route's policy: a URL's query (a
// Referer's) follows the policy as the route's own query does.
func (r *Redactor) RedactTextFor(p Policy, safe *Fields, s string) string {
	return r.matcherFor(p, safe).redactText(s)
}

// RedactMessageFor cleans free text that may quote the request (an
// error's cause, a panic's value) under a route's policy: on a
// default-deny policy it is logged as its shape (length, and with a
// HashKey a keyed hash, so equal messages can be matched), since free text
// declares no safe fields; elsewhere it is RedactText.
func (r *Redactor) RedactMessageFor(p Policy, safe *Fields, s string) string {
	m := r.matcherFor(p, safe)
	if !denies(p) {
		return m.redactText(s)
	}
	return shapeText(s, true, m.hashKey)
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
