package redaction

import (
	"mime"
	"strings"
	"unicode/utf8"
)

// Policy is a route's access-log rule for bodies. The HTTP layer picks one
// per route; the zero value is PolicyDefault.
type Policy int

// Policies, one per kind of route whose bodies need more than the default
// redaction (logins, payments, file transfers, ...).
const (
	// PolicyDefault logs redacted JSON and form bodies; anything else only as
	// a Summary unless Body.AllowText is set and the text looks clean.
	PolicyDefault Policy = iota
	// PolicyLogin is PolicyDefault plus login secrets: codes, captchas, OTPs,
	// tickets. Only the outcome and subject identifiers stay readable.
	PolicyLogin
	// PolicyPayment is PolicyDefault plus card, bank, channel-key and
	// pay-link fields; order number, channel, result code and amount stay.
	PolicyPayment
	// PolicyCallback logs only a Summary (event type, sizes, keyed hash),
	// never the raw or decrypted body.
	PolicyCallback
	// PolicyFileTransfer logs multipart and binary bodies only as a Summary
	// of parts; JSON and form bodies (task ids, results) are redacted with
	// file-content fields and signed URLs removed.
	PolicyFileTransfer
	// PolicyOpaque logs only a Summary.
	PolicyOpaque
	// PolicyConfig is PolicyDefault for config listings: the config
	// registry has already masked sensitive values, and the "key" members
	// are config key names that operators must read.
	PolicyConfig
)

// String returns the policy's name.
func (p Policy) String() string {
	switch p {
	case PolicyDefault:
		return "default"
	case PolicyLogin:
		return "login"
	case PolicyPayment:
		return "payment"
	case PolicyCallback:
		return "callback"
	case PolicyFileTransfer:
		return "file_transfer"
	case PolicyOpaque:
		return "opaque"
	case PolicyConfig:
		return "config"
	}
	return "unknown"
}

// Body is one captured request or response body.
type Body struct {
	// ContentType is the Content-Type header as sent.
	ContentType string
	// Data is the captured body, possibly a prefix (see Truncated).
	Data []byte
	// Truncated is true when the HTTP layer captured only a prefix of the body.
	Truncated bool
	// AllowText lets PolicyDefault log a text body (text/plain, XML, ...)
	// that contains no sensitive key or credential. Set it per route.
	AllowText bool
	// Parts describes a multipart body; the HTTP layer parses it, core does no I/O.
	Parts []PartInfo
	// Response is true for a response body.
	Response bool
	// Safe are the fields the route declares safe on a default-deny
	// policy (login, payment, callback, file transfer): their values are
	// logged; every other value becomes its shape. Nil: only the policy's
	// built-in troubleshooting fields.
	Safe *Fields
}

// kind is a body's content family.
type kind int

const (
	kindOther kind = iota
	kindJSON
	kindForm
	kindXML
	kindText
)

// classify maps a Content-Type header to a kind and its bare media type.
func classify(contentType string) (kind, string) {
	mt, _, err := mime.ParseMediaType(contentType)
	switch {
	case err != nil:
		return kindOther, ""
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return kindJSON, mt
	case mt == "application/x-www-form-urlencoded":
		return kindForm, mt
	case mt == "application/xml" || mt == "text/xml" || strings.HasSuffix(mt, "+xml"):
		return kindXML, mt
	case strings.HasPrefix(mt, "text/"):
		return kindText, mt
	}
	return kindOther, mt
}

// Summarise returns what the access log may write for body on a route with
// policy p. A body that cannot be parsed, or whose content type the policy
// does not log, comes back as a Summary; the raw body never does.
func (r *Redactor) Summarise(p Policy, body Body) Result {
	if len(body.Data) == 0 && len(body.Parts) == 0 {
		return Result{Mode: ModeOmitted}
	}
	k, mt := classify(body.ContentType)
	m := r.matcherFor(p, body.Safe)
	m.login = p == PolicyLogin && !body.Response
	if p == PolicyCallback || p == PolicyOpaque || len(body.Parts) > 0 {
		return r.summary(body, k, mt)
	}
	var res Result
	switch {
	case k == kindJSON:
		wk := r.walker(body.Data, p, body.Safe)
		wk.m.login = m.login
		out, err := redactJSONWith(wk)
		if err != nil {
			return r.summary(body, k, mt)
		}
		res = r.text(string(out), ModeJSON)
	case k == kindForm:
		if _, ok := formNames(body.Data); !ok {
			return r.summary(body, k, mt)
		}
		res = r.text(redactPairs(string(body.Data), m), ModeForm)
	case (k == kindText || k == kindXML) && p == PolicyDefault && body.AllowText &&
		utf8.Valid(body.Data) && !m.textSensitive(string(body.Data)):
		res = r.text(string(body.Data), ModeText)
	default:
		return r.summary(body, k, mt)
	}
	res.Truncated = res.Truncated || body.Truncated
	return res
}

// textSensitive reports whether free text mentions a sensitive key (as in
// password=, "token" or <password>) or holds a credential, a card or an ID
// number (an XML element's value, say). It is deliberately eager: a false
// positive only costs a summary instead of the text.
func (m matcher) textSensitive(s string) bool {
	if m.secretValue(s) {
		return true
	}
	words := strings.FieldsFunc(s, func(r rune) bool {
		return !(r == '_' || r == '-' || r == '.' || r >= utf8.RuneSelf ||
			'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	})
	for _, w := range words {
		if m.sensitive([]byte(w)) {
			return true
		}
	}
	return false
}
