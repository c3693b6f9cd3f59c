package redaction

import (
	"encoding/base64"
	"net/url"
	"strings"
)

// blobMinLen is the length from which an unbroken base64 string is treated as
// file content (a Base64 body is never logged: it may be a whole file with
// personal data, and it floods the log) rather than an id.
const blobMinLen = 1024

// secretValue reports whether a string value is, or holds, a credential
// whatever key it sits under: see credential, plus sensitive name=value
// and name: value pairs inside free text.
func (m matcher) secretValue(s string) bool {
	return m.credential(s, false) || m.textPair(s)
}

// credential reports a value that carries a credential by its shape: a
// bearer or basic credential or a JWT anywhere, a base64 blob or data URL,
// a PEM block, a URL or DSN with a password, a URL whose query or fragment
// has a sensitive parameter, and (unless ident) a Luhn-valid card number or
// a Chinese ID number.
func (m matcher) credential(s string, ident bool) bool {
	return m.shape(s, ident) || m.privateURL(s)
}

// shape is credential without the URL parameter test.
func (m matcher) shape(s string, ident bool) bool {
	switch {
	case len(s) < 8:
		return false
	case authCredential(s), containsJWT(s), isBlob(s), strings.Contains(s, "-----BEGIN "), hasUserinfo(s), hasCloudKey(s),
		bareBasic(s):
		return true
	}
	return !ident && (hasCardOrID(s) || identityShape(s) && !phoneValue(s))
}

// mayBeSecret is a cheap filter on a raw JSON string literal so that most
// values are copied without being unquoted: it looks in one pass for the
// bytes the shapes of credential and textPair start with, and for enough
// digits to make a card number.
func mayBeSecret(raw []byte) bool {
	if len(raw) < 10 {
		return false
	}
	if len(raw) >= blobMinLen || raw[1] == '{' || raw[1] == '[' {
		return true
	}
	digits := 0
	for i, c := range raw {
		switch secretHint[c] {
		case 0:
			continue
		case hintAlways:
			return true
		case hintDigit:
			if digits++; digits >= 11 { // a phone number, a card
				return true
			}
		case hintPrefix:
			if hasSecretPrefix(raw[i:]) {
				return true
			}
		case hintUnderscore:
			if cloudKeyAt(raw, i) {
				return true
			}
		}
	}
	// A bare Basic credential: unbroken base64 of a multiple of 4.
	return (len(raw)-2)%4 == 0 && isStdBase64(raw[1:len(raw)-1])
}

func isStdBase64(b []byte) bool {
	for _, c := range b {
		if !isBase64URL(c) && c != '+' && c != '/' && c != '=' || c == '-' || c == '_' {
			return false
		}
	}
	return true
}

const (
	hintAlways = iota + 1
	hintDigit
	hintPrefix
	hintUnderscore
)

// secretHint classifies the bytes mayBeSecret stops at.
var secretHint = func() (t [256]uint8) {
	for _, c := range []byte(`\?#@=:`) {
		t[c] = hintAlways
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = hintDigit
	}
	for _, c := range []byte("eEaA-") {
		t[c] = hintPrefix
	}
	t['_'] = hintUnderscore
	return t
}()

func hasSecretPrefix(b []byte) bool {
	has := func(p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }
	switch b[0] {
	case 'e':
		return has("eyJ") || has("earer ")
	case 'E':
		return has("EARER ")
	case 'a':
		return has("asic ")
	case 'A':
		return has("ASIC ") || has("AKIA") || has("ASIA")
	}
	return has("-----")
}

// authCredential finds "Bearer <token>" or "Basic <base64 of user:pass>",
// in any case, anywhere in s. "Bearer 令牌" in a help message is no credential.
func authCredential(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i]|0x20 != 'b' || (i > 0 && isLetter(s[i-1])) {
			continue
		}
		rest := s[i:]
		var basic bool
		switch {
		case len(rest) > 7 && strings.EqualFold(rest[:6], "bearer"):
			rest = rest[6:]
		case len(rest) > 6 && strings.EqualFold(rest[:5], "basic"):
			rest, basic = rest[5:], true
		default:
			continue
		}
		if rest[0] != ' ' && rest[0] != '\t' {
			continue
		}
		rest = strings.TrimLeft(rest, " \t")
		n := 0
		for n < len(rest) && isToken68(rest[n]) {
			n++
		}
		tok := rest[:n]
		if basic && isBasic(tok) || !basic && isCredToken(tok) {
			return true
		}
	}
	return false
}

// isCredToken tells a token from a word: long, or short with a non-letter.
func isCredToken(tok string) bool {
	if len(tok) >= 8 {
		return true
	}
	if len(tok) < 4 {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if !isLetter(tok[i]) {
			return true
		}
	}
	return false
}

// isBasic reports base64 of "user:password".
func isBasic(tok string) bool {
	if len(tok) < 4 {
		return false
	}
	b, err := base64.StdEncoding.DecodeString(tok)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(tok, "="))
	}
	return err == nil && strings.IndexByte(string(b), ':') > 0
}

func isToken68(c byte) bool {
	return isBase64URL(c) || c == '.' || c == '~' || c == '+' || c == '/' || c == '='
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// hasUserinfo finds a password in a URL or DSN: scheme://user:pass@host,
// scheme://:pass@host, or user:pass@tcp(host) (MySQL).
func hasUserinfo(s string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], "://")
		if j < 0 {
			break
		}
		auth := s[i+j+3:]
		if end := strings.IndexAny(auth, "/?# \t\n\"'"); end >= 0 {
			auth = auth[:end]
		}
		if at := strings.LastIndexByte(auth, '@'); at > 0 {
			if c := strings.IndexByte(auth[:at], ':'); c >= 0 && c < at-1 {
				return true
			}
		}
		i += j + 3
	}
	for _, proto := range [...]string{"@tcp(", "@unix("} {
		if at := strings.Index(s, proto); at > 0 {
			start := strings.LastIndexAny(s[:at], " \t\n\"'") + 1
			if c := strings.IndexByte(s[start:at], ':'); c >= 0 && start+c < at-1 {
				return true
			}
		}
	}
	return false
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

// privateURL reports an absolute or rooted URL whose query or fragment
// has a sensitive parameter, or a parameter value that is itself a secret
// (a nested URL). Parameters split at '&' and ';', as servers do.
func (m matcher) privateURL(s string) bool {
	q := strings.IndexAny(s, "?#")
	if q < 0 || !(strings.Contains(s[:q], "://") || strings.HasPrefix(s, "/")) {
		return false
	}
	for pair := range strings.FieldsFuncSeq(s[q+1:], isPairSep) {
		k, v, _ := strings.Cut(pair, "=")
		if m.sensitive([]byte(unescape(k))) || m.secretValue(unescape(v)) {
			return true
		}
	}
	return false
}

func isPairSep(r rune) bool { return r == '&' || r == ';' || r == '#' || r == '?' }

// textPair reports a name=value or name: value pair with a sensitive name
// inside free text: "password=x", "the pin: 4419", `{"token":"x"}`.
func (m matcher) textPair(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '=' && c != ':' {
			continue
		}
		name := pairName(s[:i])
		if name == "" || c == ':' && textPrefixes[strings.ToLower(name)] {
			continue
		}
		v := strings.TrimLeft(s[i+1:], ` "'`)
		if v == "" || strings.IndexByte(",;&}", v[0]) >= 0 || strings.HasPrefix(v, "//") ||
			strings.HasPrefix(v, Redacted[:len(Redacted)-1]) { // already redacted text
			continue
		}
		if m.sensitive([]byte(name)) {
			return true
		}
	}
	return false
}

// textPrefixes open Go error messages ("auth: principal lacks role"),
// not name: value pairs.
var textPrefixes = map[string]bool{"auth": true}

// pairName returns the name that ends s, behind spaces and a quote.
func pairName(s string) string {
	s = strings.TrimRight(s, ` "'`)
	i := len(s)
	for i > 0 && (isBase64URL(s[i-1]) || s[i-1] == '.' || s[i-1] >= 0x80) {
		i--
	}
	return s[i:]
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
