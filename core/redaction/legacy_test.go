package redaction

// This file keeps the matcher that redaction by meaning and shape
// replaced, as the oracle of the
// differential tests: the new matcher never redacts less than this one,
// except where the allow list or the tighter bearer and basic shapes say
// so (see legacyExempt). Do not change it.

import (
	"bytes"
	"net/url"
	"strings"
	"unicode/utf8"
)

// legacyKeys are the keys the first matcher called sensitive on every route: passwords,
// tokens, sessions, authorization, cookies, secrets, keys, signatures, nonces,
// verification codes, payment credentials, private URLs and crypto material.
// Bare "code" is deliberately absent (error and result codes must stay
// visible); PolicyLogin adds it.
var legacyKeys = []string{
	"password", "passwd", "pwd", "passphrase", "pin", "密码", "口令",
	"token", "access_token", "refresh_token", "id_token", "session", "session_id",
	"sessionid", "jsessionid", "phpsessid", "sid", "ticket",
	"authorization", "proxy_authorization", "auth", "cookie", "set_cookie",
	"secret", "client_secret", "app_secret", "密钥",
	"key", "api_key", "apikey", "private_key", "secret_key", "access_key", "encodingaeskey", "aes_key",
	"signature", "sign", "sig", "msg_signature", "pay_sign", "签名",
	"nonce", "nonce_str", "echostr",
	"verify_code", "verification_code", "captcha", "otp", "sms_code", "auth_code", "验证码",
	"card_number", "card_no", "cvv", "cvc", "pan", "pay_password",
	"pay_url", "payment_url", "qr_code", "qrcode", "code_url", "mweb_url", "h5_url", "prepay_id",
	"private_url", "signed_url", "download_url", "presigned_url", "upload_url",
	"credential", "credentials", "encrypt", "encrypted",
}

// legacySubstrings make any key containing them sensitive, so
// newPassword, client_secret_v2 and X-Amz-Signature need no entry of their own.
var legacySubstrings = []string{
	"password", "passwd", "secret", "token", "signature", "credential",
	"apikey", "privatekey", "密码", "口令", "密钥",
}

// legacyDefault is immutable: legacyRegistry has no mutating methods.
var legacyDefault = newLegacyRegistry()

// legacyRegistry is an immutable set of sensitive keys. Keys are compared after
// normalisation: lowercased, with '-', '_', '.' and ' ' removed. A leading
// "x" (the X- header prefix) is ignored when the rest is itself a registered
// key, so X-Api-Key matches api_key. It is safe for concurrent use.
type legacyRegistry struct {
	keys       map[string]struct{}
	substrings [][]byte
	// first marks the first bytes of substrings, so match can test them in
	// one pass over the key instead of one pass per substring.
	first [256]bool
}

// newLegacyRegistry returns the built-in registry plus extra exact keys.
func newLegacyRegistry(extra ...string) *legacyRegistry {
	r := &legacyRegistry{
		keys:       make(map[string]struct{}, len(legacyKeys)+len(extra)),
		substrings: make([][]byte, len(legacySubstrings)),
	}
	for i, sub := range legacySubstrings {
		r.substrings[i] = []byte(sub)
		r.first[sub[0]] = true
	}
	for _, k := range legacyKeys {
		r.keys[legacyNormalise(k)] = struct{}{}
	}
	for _, k := range extra {
		r.keys[legacyNormalise(k)] = struct{}{}
	}
	return r
}

// legacyKeySet is a registry of exact keys only, used for policy extras.
func legacyKeySet(keys ...string) *legacyRegistry {
	r := &legacyRegistry{keys: make(map[string]struct{}, len(keys))}
	for _, k := range keys {
		r.keys[legacyNormalise(k)] = struct{}{}
	}
	return r
}

// IsSensitive reports whether values stored under key must be redacted.
func (r *legacyRegistry) IsSensitive(key string) bool {
	var buf [64]byte
	return r.match(legacyAppendNormalised(buf[:0], key))
}

// match reports whether a normalised key is sensitive.
func (r *legacyRegistry) match(n []byte) bool {
	if len(n) == 0 {
		return false
	}
	if r.exact(n) {
		return true
	}
	return r.containsSubstring(n)
}

// containsSubstring reports whether n contains one of r.substrings.
func (r *legacyRegistry) containsSubstring(n []byte) bool {
	for i, c := range n {
		if !r.first[c] {
			continue
		}
		for _, s := range r.substrings {
			if s[0] == c && bytes.HasPrefix(n[i:], s) {
				return true
			}
		}
	}
	return false
}

// exact looks n up with the X- prefix rule; map lookups by string(n) do not allocate.
func (r *legacyRegistry) exact(n []byte) bool {
	if _, ok := r.keys[string(n)]; ok {
		return true
	}
	if len(n) > 1 && n[0] == 'x' {
		_, ok := r.keys[string(n[1:])]
		return ok
	}
	return false
}

// legacyNormalise returns the registry form of key.
func legacyNormalise(key string) string { return string(legacyAppendNormalised(nil, key)) }

// legacyAppendNormalised appends key lowercased and without separators to dst.
func legacyAppendNormalised[T string | []byte](dst []byte, key T) []byte {
	start := len(dst)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= utf8.RuneSelf {
			// Rare non-ASCII key: take the slow, Unicode-aware path.
			return legacyAppendSlow(dst[:start], string(key))
		}
		switch {
		case c == '-' || c == '_' || c == '.' || c == ' ':
		case 'A' <= c && c <= 'Z':
			dst = append(dst, c+('a'-'A'))
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func legacyAppendSlow(dst []byte, key string) []byte {
	return append(dst, strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(key))...)
}

// legacyMatcher is a registry plus a route policy's extra exact keys.
type legacyMatcher struct {
	base  *legacyRegistry
	extra *legacyRegistry // keys only; nil when the policy adds none
}

func (m legacyMatcher) sensitive(key []byte) bool {
	var buf [64]byte
	n := legacyAppendNormalised(buf[:0], key)
	return m.base.match(n) || (m.extra != nil && m.extra.exact(n))
}

// secretValue reports whether a string value is a credential whatever key it
// sits under: a bearer or basic credential, a JWT, a base64 blob or data URL,
// or a URL whose query carries a sensitive parameter (a signed or private URL).
func (m legacyMatcher) secretValue(s string) bool {
	switch {
	case len(s) < 8:
		return false
	case legacyHasAuthScheme(s), legacyContainsJWT(s), legacyIsBlob(s):
		return true
	}
	return m.privateURL(s)
}

func legacyHasAuthScheme(s string) bool {
	t := strings.TrimSpace(s)
	if len(t) > 7 && (strings.EqualFold(t[:7], "bearer ") || strings.EqualFold(t[:6], "basic ")) {
		return true
	}
	return strings.Contains(s, "Bearer ") || strings.Contains(s, "bearer ")
}

// legacyContainsJWT finds three or more base64url segments starting with "eyJ"
// (the encoding of `{"`), i.e. a JWS or JWE compact token, anywhere in s.
func legacyContainsJWT(s string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], "eyJ")
		if j < 0 {
			return false
		}
		start := i + j
		end, dots := start, 0
		for end < len(s) && (legacyIsBase64URL(s[end]) || s[end] == '.') {
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

func legacyIsBase64URL(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// legacyIsBlob reports a data URL or a long unbroken base64 string.
func legacyIsBlob(s string) bool {
	if strings.HasPrefix(s, "data:") && strings.Contains(s, ";base64,") {
		return true
	}
	if len(s) < blobMinLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !legacyIsBase64URL(c) && c != '+' && c != '/' && c != '=' {
			return false
		}
	}
	return true
}

// privateURL reports an absolute or rooted URL whose query has a sensitive
// parameter, or a parameter value that is itself a secret (a nested URL).
func (m legacyMatcher) privateURL(s string) bool {
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
		if m.sensitive([]byte(legacyUnescape(k))) || m.secretValue(legacyUnescape(v)) {
			return true
		}
	}
	return false
}

// legacyUnescape decodes a query component, keeping the raw text when it is not
// valid percent-encoding: redaction must not fail on malformed input.
func legacyUnescape(s string) string {
	if strings.IndexByte(s, '%') < 0 && strings.IndexByte(s, '+') < 0 {
		return s
	}
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// legacyPolicyExtras are exact keys a policy adds to the registry. It is read-only.
var legacyPolicyExtras = map[Policy]*legacyRegistry{
	PolicyLogin: legacyKeySet("code", "verifycode", "sms", "mfa_code", "totp", "session_key",
		"session_token", "ticket", "login_ticket", "state"),
	PolicyPayment: legacyKeySet("card", "bank_card", "bank_account", "bank_no", "account_no",
		"card_holder", "expiry", "expire_date", "id_card", "id_no", "channel_key", "mch_key",
		"merchant_key", "pay_info", "pay_params", "package", "deeplink", "deep_link",
		"pay_link", "jump_url", "redirect_url", "return_url", "qr", "cert"),
	PolicyFileTransfer: legacyKeySet("content", "file_content", "file_data", "base64", "data_base64",
		"blob", "chunk", "bytes", "url", "file_url", "temp_url", "tmp_url"),
}
