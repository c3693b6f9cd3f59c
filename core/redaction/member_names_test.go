package redaction_test

import (
	"strings"
	"testing"

	"github.com/july/template/core/redaction"
)

// TestMemberNamesAreValues: a member name shaped like a secret or an
// identity (a map keyed by tokens, ID numbers, cards or phones) is
// replaced like a value, on every policy.
func TestMemberNamesAreValues(t *testing.T) {
	t.Parallel()
	cases := []struct{ doc, secret string }{
		{`{"sessions":{"` + jwt + `":{"ok":true}}}`, jwt},
		{`{"results":{"110101199003074514":"ok"}}`, "110101199003074514"},
		{`{"results":{"11010519491230018X":"ok"}}`, "11010519491230018X"},
		{`{"results":{"110101900307451":"ok"}}`, "110101900307451"},               // 15-digit ID
		{`{"results":{"110101 19900307 4514":"ok"}}`, "19900307"},                 // spaced ID
		{`{"bindings":{"4111111111111111":"primary"}}`, "4111111111111111"},       // Luhn
		{`{"bindings":{"6222020200112233445":"primary"}}`, "6222020200112233445"}, // no Luhn, card context
		{`{"bank_cards":{"6222 0202 0011 2233":"primary"}}`, "0011"},
		{`{"contacts":{"13812345678":"mum"}}`, "13812345678"},
		{`{"contacts":{"+86 138 1234 5678":"mum"}}`, "1234"},
	}
	var r redaction.Redactor
	for _, p := range []redaction.Policy{redaction.PolicyDefault, redaction.PolicyPayment, redaction.PolicyLogin, redaction.PolicyConfig} {
		for _, c := range cases {
			res := r.Summarise(p, redaction.Body{ContentType: "application/json", Data: []byte(c.doc)})
			if res.Mode != redaction.ModeJSON || strings.Contains(res.Text, c.secret) {
				t.Errorf("%v: %s logged as %s %s", p, c.doc, res.Mode, res.Text)
			}
		}
	}
	// Ordinary keys stay: ids, dates, short numbers, order numbers.
	for _, doc := range []string{`{"by_day":{"2024-05-01":3}}`, `{"orders":{"O2024050112345678":1}}`, `{"counts":{"12345":1}}`} {
		res, err := r.RedactJSON([]byte(doc))
		if err != nil || res.Text != doc {
			t.Errorf("%s became %s (%v)", doc, res.Text, err)
		}
	}
}
