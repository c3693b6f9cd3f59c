package redaction

import "strings"

// RedactText cleans free text such as an upstream error message before it is
// stored or logged: "key=value", "key: value" and "key":"value" pairs under a
// sensitive key lose their value, and credential-looking words (bearer
// credentials, JWTs, signed or private URLs, base64 blobs) are replaced
// whole. Everything else is kept, so the message stays useful.
func (r *Redactor) RedactText(s string) string {
	m := r.matcher(PolicyDefault)
	orig := strings.Fields(s)
	words := append([]string(nil), orig...)
	changed := false
	for i, w := range orig {
		if i > 0 && (strings.EqualFold(orig[i-1], "bearer") || strings.EqualFold(orig[i-1], "basic")) {
			words[i], changed = Redacted, true
			continue
		}
		if m.secretValue(w) || containsJWT(w) {
			words[i], changed = Redacted, true
			continue
		}
		if out, ok := redactPair(w, m); ok {
			words[i], changed = out, true
			continue
		}
		// "password: hunter2" spans two words: the key ends with ':'.
		if i > 0 && strings.HasSuffix(orig[i-1], ":") && m.sensitive([]byte(strings.Trim(orig[i-1], `":{,`))) {
			words[i], changed = Redacted, true
		}
	}
	if !changed {
		return s
	}
	return strings.Join(words, " ")
}

// redactPair redacts the values of sensitive key=value or key:value pairs
// inside one word, e.g. a=1&token=x or {"token":"x","amount":5}.
func redactPair(w string, m matcher) (string, bool) {
	var b strings.Builder
	changed := false
	for {
		i := strings.IndexAny(w, "=:")
		if i < 0 || i == len(w)-1 {
			b.WriteString(w)
			return b.String(), changed
		}
		key := w[:i]
		if j := strings.LastIndexAny(key, `{,;&?"' `); j >= 0 {
			key = key[j+1:]
		}
		if k := strings.Trim(w[:i], `"'{,;&? `); k != "" && (m.sensitive([]byte(key)) || m.sensitive([]byte(k))) {
			b.WriteString(w[:i+1])
			rest := w[i+1:]
			end := len(rest)
			if rest[0] == '"' || rest[0] == '\'' {
				if q := strings.IndexByte(rest[1:], rest[0]); q >= 0 {
					end = q + 2
				}
			} else if e := strings.IndexAny(rest, ",&;}"); e >= 0 {
				end = e
			}
			b.WriteString(Redacted)
			w, changed = rest[end:], true
			continue
		}
		b.WriteString(w[:i+1])
		w = w[i+1:]
	}
}
