package redaction

import (
	"bytes"
	"net/url"
	"strings"
)

// blobMinLen is the length from which an unbroken base64 string is treated as
// file content (the PRD forbids logging Base64 bodies) rather than an id.
const blobMinLen = 1024

// secretValue reports whether a string value is a credential whatever key it
// sits under: a bearer or basic credential, a JWT, a base64 blob or data URL,
// or a URL whose query carries a sensitive parameter (a signed or private URL).
func (m matcher) secretValue(s string) bool {
	switch {
	case len(s) < 8:
		return false
	case hasAuthScheme(s), containsJWT(s), isBlob(s):
		return true
	}
	return m.privateURL(s)
}

// mayBeSecret is a cheap filter on a raw JSON string literal so that most
// values are copied without being unquoted.
// It looks for a backslash, '?', "eyJ", "earer ", "EARER ", "asic " or
// "ASIC " in one pass.
func mayBeSecret(raw []byte) bool {
	if len(raw) < 10 {
		return false
	}
	if len(raw) >= blobMinLen || bytes.HasPrefix(raw, []byte(`"data:`)) {
		return true
	}
	for i, c := range raw {
		if !secretHint[c] {
			continue
		}
		switch rest := raw[i:]; c {
		case '\\', '?':
			return true
		case 'e':
			if bytes.HasPrefix(rest, []byte("eyJ")) || bytes.HasPrefix(rest, []byte("earer ")) {
				return true
			}
		case 'E':
			if bytes.HasPrefix(rest, []byte("EARER ")) {
				return true
			}
		case 'a':
			if bytes.HasPrefix(rest, []byte("asic ")) {
				return true
			}
		case 'A':
			if bytes.HasPrefix(rest, []byte("ASIC ")) {
				return true
			}
		}
	}
	return false
}

// secretHint marks the bytes at which mayBeSecret's patterns start.
var secretHint = [256]bool{'\\': true, '?': true, 'e': true, 'E': true, 'a': true, 'A': true}

func hasAuthScheme(s string) bool {
	t := strings.TrimSpace(s)
	if len(t) > 7 && (strings.EqualFold(t[:7], "bearer ") || strings.EqualFold(t[:6], "basic ")) {
		return true
	}
	return strings.Contains(s, "Bearer ") || strings.Contains(s, "bearer ")
}

// containsJWT finds three or more base64url segments starting with "eyJ"
// (the encoding of `{"`), i.e. a JWS or JWE compact token, anywhere in s.
func containsJWT(s string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], "eyJ")
		if j < 0 {
			return false
		}
		start := i + j
		end, dots := start, 0
		for end < len(s) && (isBase64URL(s[end]) || s[end] == '.') {
			if s[end] == '.' {
				dots++
			}
			end++
		}
		if dots >= 2 && end-start >= 24 {
			return true
		}
		i = start + 3
	}
}

func isBase64URL(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// isBlob reports a data URL or a long unbroken base64 string.
func isBlob(s string) bool {
	if strings.HasPrefix(s, "data:") && strings.Contains(s, ";base64,") {
		return true
	}
	if len(s) < blobMinLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isBase64URL(c) && c != '+' && c != '/' && c != '=' {
			return false
		}
	}
	return true
}

// privateURL reports an absolute or rooted URL whose query has a sensitive
// parameter, or a parameter value that is itself a secret (a nested URL).
func (m matcher) privateURL(s string) bool {
	q := strings.IndexByte(s, '?')
	if q < 0 || !(strings.Contains(s[:q], "://") || strings.HasPrefix(s, "/")) {
		return false
	}
	query := s[q+1:]
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query = query[:h]
	}
	for pair := range strings.SplitSeq(query, "&") {
		k, v, _ := strings.Cut(pair, "=")
		if m.sensitive([]byte(unescape(k))) || m.secretValue(unescape(v)) {
			return true
		}
	}
	return false
}

// unescape decodes a query component, keeping the raw text when it is not
// valid percent-encoding: redaction must not fail on malformed input.
func unescape(s string) string {
	if strings.IndexByte(s, '%') < 0 && strings.IndexByte(s, '+') < 0 {
		return s
	}
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}
