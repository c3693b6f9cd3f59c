package redaction_test

import (
	"strings"
	"testing"

	"github.com/july/template/core/redaction"
)

// leakCorpus holds, by category (the PRD's list plus personal data), the
// fields real Chinese payment, identity and messaging payloads carry that
// an earlier name table let through on default routes. Each value must be
// gone from the log line; want, when set, is what a PII mask keeps.
var leakCorpus = map[string][]struct{ name, value, want string }{
	"verification codes": {
		{"vcode", "551234", ""}, {"yzm", "661234", ""}, {"validCode", "771234", ""}, {"mobileCode", "881234", ""},
		{"mobile_code", "991234", ""}, {"msgCode", "441234", ""}, {"phoneCode", "331234", ""},
	},
	"payment credentials": {
		{"dynamic_id", "286612345678901234", ""}, {"pay_code", "134567890123456789", ""}, {"apiV3Key", "Av3KeySecret0123456789abcdefABCD", ""},
		{"acctNo", "6222020200112233445", ""}, {"accNo", "6222020200112233446", ""}, {"yhkh", "6222020200112233447", ""},
		{"validDate", "0828", ""}, {"expDate", "1229", ""},
	},
	"tokens and cookies": {
		{"connect.sid", "s%3AConnSid0123.abc", ""}, {"koa.sess", "KoaSess0123abc", ""}, {"sess", "SessVal0123abc", ""},
		{"note", "dXNlcjpwYXNzd29yZA==", ""}, {"hdr", "YWRtaW46czNjcmV0", ""}, // prefix-less Basic
	},
	"private urls": {
		{"link", "https://cdn.example.com/v/a.mp4?auth_key=1700000000-0-0-AuthKeySig0123", ""},
	},
	"identity numbers": {
		{"zjhm", "110101199003074514", ""}, {"idcardno", "110101900307451", ""}, {"certNo", "110101 19900307 4514", ""},
		{"note", "110101900307451", ""}, {"passport", "E12345678", ""}, {"passportNo", "G87654321", ""},
	},
	"personal data": {
		{"phone", "13812345678", "*******5678"}, {"mobile", "+86 139 1234 5678", "*********5678"},
		{"reserved_mobile", "13712345678", "*******5678"}, {"手机号", "13612345678", "*******5678"},
		{"contact", "13512345678", "*******5678"}, // by its shape, whatever the name
		{"real_name", "王小明", "王**"}, {"姓名", "李四", "李*"}, {"holder_name", "张三丰", "张**"},
		{"openid", "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o", "************************eS6o"},
		{"unionid", "o6_bmasdasdsad6_2sgVt7hMZOPfL", "*************************OPfL"},
	},
}

func TestLeakCorpusByCategory(t *testing.T) {
	t.Parallel()
	var r redaction.Redactor
	for cat, cases := range leakCorpus {
		for _, c := range cases {
			doc := `{"request_id":"r-1","` + c.name + `":"` + c.value + `"}`
			res, err := r.RedactJSON([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(res.Text, c.value) || !strings.Contains(res.Text, `"request_id":"r-1"`) {
				t.Errorf("%s: %s logged as %s", cat, doc, res.Text)
			}
			if c.want != "" && !strings.Contains(res.Text, `"`+c.want+`"`) {
				t.Errorf("%s: %s: want mask %q in %s", cat, c.name, c.want, res.Text)
			}
			// The same in a query string and as free text.
			q := r.RedactQuery("a=1&" + c.name + "=" + c.value)
			if c.want == "" && strings.Contains(q, c.value) && c.name != "note" && c.name != "hdr" && c.name != "contact" {
				t.Errorf("%s: query %s", cat, q)
			}
		}
	}
}

// TestFalsePositivesStayReadable: the fields operators troubleshoot with
// are not secrets and stay as sent on default routes.
func TestFalsePositivesStayReadable(t *testing.T) {
	t.Parallel()
	var r redaction.Redactor
	for _, doc := range []string{
		`{"request_id":"req-01HX3K","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}`,
		`{"channel":"wechat","pay_channel":"alipay","trade_type":"JSAPI"}`,
		`{"amount":"12.50","amount_cents":1250,"total_fee":100,"currency":"CNY"}`,
		`{"created_at":"2024-07-01T10:00:00Z","ts":1719828000,"ts_ms":1719828000123,"date":"2024-07-01"}`,
		`{"order_id":"O2024070112345678","out_trade_no":"6823789339978248","trade_no":"2013112011001004330000121536"}`,
		`{"phone_count":3,"mobile_verified":true,"name":"iPhone 15","sku":"SKU-13812345678X"}`,
		`{"status":"SUCCESS","code":"PAY_OK","result_code":"SUCCESS","page":2,"size":20}`,
		`{"counts":{"2024-07-01":3,"12345":1}}`,
	} {
		res, err := r.RedactJSON([]byte(doc))
		if err != nil || res.Text != doc {
			t.Errorf("%s became %s (%v)", doc, res.Text, err)
		}
	}
}
