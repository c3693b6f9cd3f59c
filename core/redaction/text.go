package redaction

import "strings"

// RedactText cleans free text such as an upstream error message, a
// User-Agent or a Referer before it is stored or logged: PEM blocks, card
// and ID numbers are replaced, URLs lose their password and their
// sensitive parameters, "key=value", "key: value" and "key":"value" pairs
// under a sensitive key lose their value, and credential-looking words
// (bearer credentials, JWTs, DSNs, base64 blobs) are replaced whole.
// Everything else is kept, so the message stays useful.
func (r *Redactor) RedactText(s string) string {
	return r.matcher(PolicyDefault).redactText(s)
}

func (m matcher) redactText(s string) string {
	if plainText(s) {
		return s
	}
	s = redactSpans(s)
	orig := strings.Fields(s)
	words := append([]string(nil), orig...)
	changed := false
	for i, w := range orig {
		if i > 0 && (strings.EqualFold(orig[i-1], "bearer") || strings.EqualFold(orig[i-1], "basic")) &&
			(isCredToken(strings.Trim(w, `"',;:.`)) || isBasic(w)) {
			words[i], changed = Redacted, true
			continue
		}
		if isURLWord(w) {
			if out := m.redactURL(w); out != w {
				words[i], changed = out, true
			}
			continue
		}
		if m.credential(w, false) {
			words[i], changed = Redacted, true
			continue
		}
		if out, ok := redactPair(w, m); ok {
			words[i], changed = out, true
			continue
		}
		// "password: hunter2" spans two words: the key ends with ':'. In
		// "token: no bearer token" the next word starts a sentence: only a
		// token-like or final word is a value.
		if i > 0 && strings.HasSuffix(orig[i-1], ":") && (isCredToken(w) || i == len(orig)-1) {
			k := strings.Trim(orig[i-1], `":{,`)
			if !textPrefixes[strings.ToLower(k)] && m.sensitive([]byte(k)) {
				words[i], changed = Redacted, true
			}
		}
	}
	if !changed {
		return s
	}
	return strings.Join(words, " ")
}

// plainText reports text with none of the shapes redactText acts on, so
// that a typical User-Agent costs no allocation.
func plainText(s string) bool {
	return !strings.ContainsAny(s, "=:@?#") && !strings.HasPrefix(s, "/") && !strings.Contains(s, "-----BEGIN ") &&
		!authCredential(s) && !containsJWT(s) && !isBlob(s) && !hasCardOrID(s) && !hasCloudKey(s)
}

// redactSpans replaces the secrets that span words: PEM blocks, and card
// and ID numbers written in groups.
func redactSpans(s string) string {
	for {
		i := strings.Index(s, "-----BEGIN ")
		if i < 0 {
			break
		}
		end := len(s)
		if j := strings.Index(s[i:], "-----END "); j >= 0 {
			if k := strings.Index(s[i+j+9:], "-----"); k >= 0 {
				end = i + j + 9 + k + 5
			}
		}
		s = s[:i] + Redacted + s[end:]
	}
	if !hasCardOrID(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if !isDigit(s[i]) || i > 0 && isAlnum(s[i-1]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		var buf [20]byte
		_, end := scanGroups(s, i, buf[:0])
		if end < len(s) && (s[end] == 'X' || s[end] == 'x') {
			end++
		}
		if hasCardOrID(s[i:end]) {
			b.WriteString(Redacted)
		} else {
			b.WriteString(s[i:end])
		}
		i = end
	}
	return b.String()
}

// isURLWord reports a word that is an absolute or rooted URL.
func isURLWord(w string) bool {
	return strings.Contains(w, "://") || strings.HasPrefix(w, "/") && strings.ContainsAny(w, "?#")
}

// redactURL keeps a URL's scheme, host and path: the userinfo goes, and so
// does each sensitive query or fragment parameter. A URL that still holds
// a credential (a JWT in the path) is replaced whole.
func (m matcher) redactURL(w string) string {
	out := w
	if i := strings.Index(out, "://"); i >= 0 {
		auth := out[i+3:]
		if end := strings.IndexAny(auth, "/?#"); end >= 0 {
			auth = auth[:end]
		}
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			out = out[:i+3] + Redacted + out[i+3+at:]
		}
	}
	if q := strings.IndexAny(out, "?#"); q >= 0 {
		out = out[:q+1] + redactPairs(strings.ReplaceAll(out[q+1:], "#", "&"), m)
	}
	if m.shape(out, false) {
		return Redacted
	}
	return out
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
