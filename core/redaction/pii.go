package redaction

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"
)

// PII kinds: what the PII policy masks on default routes, and how.
const (
	piiPhone  = 1 + iota // keep the last 4 digits
	piiName              // keep the first character (the surname)
	piiOpenID            // keep the last 4 characters
)

func piiOf(f uint16) int {
	switch {
	case f&flagPIIPhone != 0:
		return piiPhone
	case f&flagPIIName != 0:
		return piiName
	case f&flagPIIID != 0:
		return piiOpenID
	}
	return 0
}

// piiWords name personal data by one word of the key (mobilePhone,
// reserved_mobile, 手机号); piiNames by the whole joined key.
var (
	piiWords = map[string]uint16{
		"phone": flagPIIPhone, "mobile": flagPIIPhone, "tel": flagPIIPhone, "telephone": flagPIIPhone,
		"cellphone": flagPIIPhone, "msisdn": flagPIIPhone, "手机": flagPIIPhone, "手机号": flagPIIPhone,
		"手机号码": flagPIIPhone, "电话": flagPIIPhone, "联系电话": flagPIIPhone, "预留手机号": flagPIIPhone,
		"openid": flagPIIID, "unionid": flagPIIID, "姓名": flagPIIName, "真实姓名": flagPIIName,
	}
	piiNames = map[string]uint16{
		"realname": flagPIIName, "truename": flagPIIName, "fullname": flagPIIName, "customername": flagPIIName,
		"custname": flagPIIName, "contactname": flagPIIName, "holdername": flagPIIName, "cardholder": flagPIIName,
		"cardholdername": flagPIIName, "payername": flagPIIName, "receivername": flagPIIName, "accountname": flagPIIName,
		"xm": flagPIIName, "openid": flagPIIID, "unionid": flagPIIID, "mobileno": flagPIIPhone, "phoneno": flagPIIPhone,
		"sjh": flagPIIPhone, "sjhm": flagPIIPhone,
	}
	cardWords = map[string]bool{
		"card": true, "cards": true, "bank": true, "binding": true, "bindings": true, "acct": true,
		"account": true, "accounts": true, "银行卡": true,
	}
)

// nameFlags classifies a member name by its shape and words: secret- or
// identity-shaped names, card contexts and PII fields.
func nameFlags(k []byte) uint16 {
	var f uint16
	if len(k) >= 11 && (digitCount(k) >= 11 || bytes.Contains(k, []byte("eyJ"))) {
		s := string(k)
		switch {
		case identityShape(s) || containsJWT(s) || hasCardOrID(s):
			f |= flagIdentKey
		default:
			if d := strippedDigits(s); len(d) >= 12 && len(d) <= 19 {
				f |= flagDigitsKey
			}
		}
	}
	var buf [64]byte
	var ends [maxWords]uint16
	joined, n := splitWords(buf[:0], k, &ends)
	if len(joined) == 0 {
		return f
	}
	f |= piiNames[string(joined)]
	start := uint16(0)
	for i := range n {
		w := joined[start:ends[i]]
		start = ends[i]
		// phone_count counts phones: only a last word, or one before
		// no/number, names the value itself.
		if p := piiWords[string(w)]; p != 0 && f&(flagPIIPhone|flagPIIName|flagPIIID) == 0 && (i == n-1 || piiTail(joined[ends[i]:ends[i+1]])) {
			f |= p
		}
		if cardWords[string(w)] {
			f |= flagCardCtx
		}
	}
	return f
}

// strippedDigits returns s without spaces, hyphens and a leading '+',
// or "" when anything else is left.
func strippedDigits(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case isDigit(c):
			b = append(b, c)
		case c == ' ' || c == '-' || c == '+' && i == 0:
		case (c == 'X' || c == 'x') && i == len(s)-1:
			b = append(b, 'X')
		default:
			return ""
		}
	}
	return string(b)
}

// identityShape reports a whole value that is a Chinese ID number (15 or
// 18 characters, in any spacing) or a mainland mobile number (with or
// without +86, in any spacing).
func identityShape(s string) bool {
	if len(s) < 11 || len(s) > 40 {
		return false
	}
	d := strippedDigits(s)
	switch len(d) {
	case 15:
		return id15(d)
	case 18:
		return validID([]byte(d))
	}
	return phoneValue(s)
}

// id15 checks the date of a first-generation 15-digit ID: 6 region
// digits, YYMMDD, 3 sequence digits.
func id15(d string) bool {
	if d[0] == '0' || strings.IndexByte(d, 'X') >= 0 {
		return false
	}
	mm, _ := strconv.Atoi(d[8:10])
	dd, _ := strconv.Atoi(d[10:12])
	return mm >= 1 && mm <= 12 && dd >= 1 && dd <= 31
}

// phoneValue reports a whole value that is a mainland mobile number:
// 1[3-9] and 9 more digits, with an optional +86 or 86 and any spacing.
func phoneValue(s string) bool {
	if len(s) < 11 || len(s) > 20 {
		return false
	}
	d := strippedDigits(s)
	if len(d) == 13 && strings.HasPrefix(d, "86") {
		d = d[2:]
	}
	return len(d) == 11 && phoneDigits([]byte(d))
}

func phoneDigits(d []byte) bool {
	if len(d) != 11 || d[0] != '1' || d[1] < '3' || d[1] > '9' {
		return false
	}
	for _, c := range d {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// bareBasic reports a whole value that is a Basic credential without its
// "Basic " prefix: base64 of printable "user:password".
func bareBasic(s string) bool {
	if len(s) < 8 || len(s) > 200 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isBase64URL(c) && c != '+' && c != '/' && c != '=' || c == '-' || c == '_' {
			return false
		}
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(s); err != nil {
			return false
		}
	}
	c := bytes.IndexByte(b, ':')
	if c <= 0 || c == len(b)-1 {
		return false
	}
	for _, x := range b {
		if x <= ' ' || x > '~' {
			return false
		}
	}
	return true
}

// appendMasked writes the PII mask of the value literal raw (a string or
// a number) as a JSON string.
func appendMasked(out, raw []byte, kind int) []byte {
	s := string(raw)
	if raw[0] == '"' {
		s = unquote(raw)
	}
	return appendQuoted(out, []byte(maskPII(s, kind)))
}

// maskPII keeps what troubleshooting needs of a personal value.
func maskPII(s string, kind int) string {
	n := utf8.RuneCountInString(s)
	switch kind {
	case piiName:
		if n <= 1 {
			return "*"
		}
		r, size := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError {
			return strings.Repeat("*", n)
		}
		return s[:size] + strings.Repeat("*", n-1)
	default: // phone, openid: the last 4
		if n <= 6 {
			return strings.Repeat("*", n)
		}
		d := s
		if kind == piiPhone {
			if x := strippedDigits(s); x != "" {
				d = x
			}
		}
		if !utf8.ValidString(d) {
			return strings.Repeat("*", n)
		}
		return strings.Repeat("*", len(d)-4) + d[len(d)-4:]
	}
}

// appendShape writes a default-deny redaction: "[REDACTED:<type>]" with a
// string's length in characters and a number's in digits, and, for a
// correlated field with a key, the value's keyed hash.
func appendShape(out, raw []byte, hash bool, key []byte) []byte {
	out = append(out, `"[REDACTED:`...)
	switch raw[0] {
	case '"':
		out = append(out, "string:"...)
		out = strconv.AppendInt(out, int64(utf8.RuneCountInString(unquote(raw))), 10)
	case '{':
		out = append(out, "object"...)
	case '[':
		out = append(out, "array"...)
	case 't', 'f':
		out = append(out, "bool"...)
	case 'n':
		out = append(out, "null"...)
	default:
		out = append(out, "number:"...)
		out = strconv.AppendInt(out, int64(len(raw)), 10)
	}
	if hash && len(key) > 0 {
		v := raw
		if raw[0] == '"' {
			v = []byte(unquote(raw)) // the same hash as the value in a query
		}
		out = append(out, ':')
		out = append(out, valueHash(key, v)...)
	}
	return append(out, `]"`...)
}

// shapeText is appendShape for a query or form value.
func shapeText(v string, hash bool, key []byte) string {
	b := appendShape(nil, appendQuoted(nil, []byte(v)), hash, key)
	return string(b[1 : len(b)-1]) // as text: no quotes
}

func digitCount(b []byte) int {
	n := 0
	for _, c := range b {
		if isDigit(c) {
			n++
		}
	}
	return n
}

func piiTail(w []byte) bool {
	switch string(w) {
	case "no", "number", "num", "hm", "haoma":
		return true
	}
	return false
}
