package redaction

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// builtinKeys are the keys the PRD calls sensitive on every route: passwords,
// tokens, sessions, authorization, cookies, secrets, keys, signatures, nonces,
// verification codes, payment credentials, private URLs and crypto material.
// Bare "code" is deliberately absent (error and result codes must stay
// visible); PolicyLogin adds it.
var builtinKeys = []string{
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

// builtinSubstrings make any key containing them sensitive, so
// newPassword, client_secret_v2 and X-Amz-Signature need no entry of their own.
var builtinSubstrings = []string{
	"password", "passwd", "secret", "token", "signature", "credential",
	"apikey", "privatekey", "密码", "口令", "密钥",
}

// defaultRegistry is immutable: Registry has no mutating methods.
var defaultRegistry = NewRegistry()

// Registry is an immutable set of sensitive keys. Keys are compared after
// normalisation: lowercased, with '-', '_', '.' and ' ' removed. A leading
// "x" (the X- header prefix) is ignored when the rest is itself a registered
// key, so X-Api-Key matches api_key. It is safe for concurrent use.
type Registry struct {
	keys       map[string]struct{}
	substrings [][]byte
	// first marks the first bytes of substrings, so match can test them in
	// one pass over the key instead of one pass per substring.
	first [256]bool
}

// NewRegistry returns the built-in registry plus extra exact keys.
func NewRegistry(extra ...string) *Registry {
	r := &Registry{
		keys:       make(map[string]struct{}, len(builtinKeys)+len(extra)),
		substrings: make([][]byte, len(builtinSubstrings)),
	}
	for i, sub := range builtinSubstrings {
		r.substrings[i] = []byte(sub)
		r.first[sub[0]] = true
	}
	for _, k := range builtinKeys {
		r.keys[normalise(k)] = struct{}{}
	}
	for _, k := range extra {
		r.keys[normalise(k)] = struct{}{}
	}
	return r
}

// keySet is a registry of exact keys only, used for policy extras.
func keySet(keys ...string) *Registry {
	r := &Registry{keys: make(map[string]struct{}, len(keys))}
	for _, k := range keys {
		r.keys[normalise(k)] = struct{}{}
	}
	return r
}

// Default returns the built-in registry. It is shared and immutable.
func Default() *Registry { return defaultRegistry }

// IsSensitive reports whether values stored under key must be redacted.
func (r *Registry) IsSensitive(key string) bool {
	var buf [64]byte
	return r.match(appendNormalised(buf[:0], key))
}

// match reports whether a normalised key is sensitive.
func (r *Registry) match(n []byte) bool {
	if len(n) == 0 {
		return false
	}
	if r.exact(n) {
		return true
	}
	return r.containsSubstring(n)
}

// containsSubstring reports whether n contains one of r.substrings.
func (r *Registry) containsSubstring(n []byte) bool {
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
func (r *Registry) exact(n []byte) bool {
	if _, ok := r.keys[string(n)]; ok {
		return true
	}
	if len(n) > 1 && n[0] == 'x' {
		_, ok := r.keys[string(n[1:])]
		return ok
	}
	return false
}

// normalise returns the registry form of key.
func normalise(key string) string { return string(appendNormalised(nil, key)) }

// appendNormalised appends key lowercased and without separators to dst.
func appendNormalised[T string | []byte](dst []byte, key T) []byte {
	start := len(dst)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= utf8.RuneSelf {
			// Rare non-ASCII key: take the slow, Unicode-aware path.
			return appendSlow(dst[:start], string(key))
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

func appendSlow(dst []byte, key string) []byte {
	return append(dst, strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(key))...)
}

// matcher is a registry plus a route policy's extra exact keys.
type matcher struct {
	base  *Registry
	extra *Registry // keys only; nil when the policy adds none
}

func (m matcher) sensitive(key []byte) bool {
	var buf [64]byte
	n := appendNormalised(buf[:0], key)
	return m.base.match(n) || (m.extra != nil && m.extra.exact(n))
}
