package redaction_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/july/template/core/redaction"
)

// sensitivePolicies are the default-deny policies.
var sensitivePolicies = []redaction.Policy{
	redaction.PolicyLogin, redaction.PolicyPayment, redaction.PolicyCallback, redaction.PolicyFileTransfer,
}

// gen builds random documents whose every value is recorded, so a test can
// grep the output for each one.
type gen struct {
	r      *rand.Rand
	values []string
	bools  bool
}

const nameRunes = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-."

var cjkNames = []string{"付款码", "卡号", "姓名", "手机", "备注", "账户", "数据"}

// name returns a random member name: ASCII with separators and capitals,
// or Chinese, or a mix. A leading 'q' and a trailing digit keep it out of
// every safe list.
func (g *gen) name() string {
	var b strings.Builder
	b.WriteByte('q')
	for range 2 + g.r.IntN(10) {
		b.WriteByte(nameRunes[g.r.IntN(len(nameRunes))])
	}
	if g.r.IntN(4) == 0 {
		b.WriteString(cjkNames[g.r.IntN(len(cjkNames))])
	}
	b.WriteByte('0' + byte(g.r.IntN(10)))
	return b.String()
}

// scalar returns a random scalar literal and records its text.
func (g *gen) scalar() any {
	switch g.r.IntN(5) {
	case 0:
		n := 100000 + g.r.Int64N(1e12)
		g.values = append(g.values, fmt.Sprint(n))
		return n
	case 1:
		g.bools = true
		return g.r.IntN(2) == 0
	case 2: // digits, as a code, phone or account number would be
		s := fmt.Sprint(100000 + g.r.Int64N(1e15))
		g.values = append(g.values, s)
		return s
	case 3: // Chinese text
		s := "值" + fmt.Sprint(g.r.Int64N(1e9)) + "数据"
		g.values = append(g.values, s)
		return s
	}
	var b strings.Builder
	b.WriteString("V")
	for range 6 + g.r.IntN(20) {
		b.WriteByte(nameRunes[g.r.IntN(62)])
	}
	g.values = append(g.values, b.String())
	return b.String()
}

func (g *gen) value(depth int) any {
	if depth > 3 || g.r.IntN(3) > 0 {
		return g.scalar()
	}
	if g.r.IntN(2) == 0 {
		a := make([]any, 1+g.r.IntN(3))
		for i := range a {
			a[i] = g.value(depth + 1)
		}
		return a
	}
	return g.object(depth + 1)
}

func (g *gen) object(depth int) map[string]any {
	m := map[string]any{}
	for range 1 + g.r.IntN(5) {
		m[g.name()] = g.value(depth)
	}
	return m
}

// leaked returns the first recorded value found in out.
func (g *gen) leaked(out string) string {
	for _, v := range g.values {
		if strings.Contains(out, v) {
			return v
		}
	}
	if g.bools && (strings.Contains(out, "true") || strings.Contains(out, "false")) {
		return "a bool"
	}
	return ""
}

func resultText(t *testing.T, res redaction.Result) string {
	t.Helper()
	s, err := json.Marshal(res.Summary)
	if err != nil {
		t.Fatal(err)
	}
	return res.Text + string(s)
}

// TestDefaultDenyProperty generates random field names and values, nested
// at random, and proves that under every sensitive policy none of the
// values is logged, in a JSON or form body, request or response, or a
// query string: only declared fields keep values.
func TestDefaultDenyProperty(t *testing.T) {
	t.Parallel()
	r := redaction.Redactor{HashKey: []byte("k"), HashRedacted: true}
	for _, p := range sensitivePolicies {
		rng := rand.New(rand.NewPCG(uint64(p), 45))
		for i := range 300 {
			g := &gen{r: rng}
			doc, err := json.Marshal(g.object(0))
			if err != nil {
				t.Fatal(err)
			}
			for _, resp := range []bool{false, true} {
				out := resultText(t, r.Summarise(p, redaction.Body{ContentType: "application/json", Data: doc, Response: resp}))
				if v := g.leaked(out); v != "" {
					t.Fatalf("%v #%d: %q leaked from %s\ninto %s", p, i, v, doc, out)
				}
			}
			g2 := &gen{r: rng}
			form := url.Values{}
			for range 1 + rng.IntN(5) {
				form.Add(g2.name(), fmt.Sprint(g2.scalar()))
			}
			g2.bools = false // a form's bool is text; "true" may be a name's part
			enc := form.Encode()
			out := resultText(t, r.Summarise(p, redaction.Body{ContentType: "application/x-www-form-urlencoded", Data: []byte(enc)}))
			if v := g2.leaked(out); v != "" {
				t.Fatalf("%v #%d: %q leaked from form %s into %s", p, i, v, enc, out)
			}
			if out := r.RedactQueryFor(p, nil, enc); g2.leaked(out) != "" {
				t.Fatalf("%v #%d: query %s logged as %s", p, i, enc, out)
			}
		}
	}
}

// TestDefaultDenyKeepsDeclared checks the other half: what a route
// declares safe, and the built-in troubleshooting fields, stay readable at
// any depth, and a correlated field logs a keyed hash of its value.
func TestDefaultDenyKeepsDeclared(t *testing.T) {
	t.Parallel()
	r := redaction.Redactor{HashKey: []byte("k")}
	safe := redaction.NewFields([]string{"order_id", "channel", "amount_cents", "items"}, []string{"agent_id"})
	body := `{"order_id":"T-1001","channel":"wechat","amount_cents":1500,"agent_id":"agent-7",` +
		`"dynamic_id":"286612345678901234","code":"482913","note":"call 13812345678",` +
		`"error":{"code":"VALIDATION_FAILED","request_id":"req-9"},"items":[{"channel":"alipay","sku":"SKU-1"}]}`
	res := r.Summarise(redaction.PolicyPayment, redaction.Body{ContentType: "application/json", Data: []byte(body), Safe: safe})
	for _, keep := range []string{`"order_id":"T-1001"`, `"channel":"wechat"`, `"amount_cents":1500`,
		`"code":"VALIDATION_FAILED"`, `"request_id":"req-9"`, `"channel":"alipay"`} {
		if !strings.Contains(res.Text, keep) {
			t.Errorf("%s lost from %s", keep, res.Text)
		}
	}
	for _, gone := range []string{"286612345678901234", "482913", "13812345678", "agent-7", "SKU-1"} {
		if strings.Contains(res.Text, gone) {
			t.Errorf("%s logged: %s", gone, res.Text)
		}
	}
	for _, shape := range []string{`"dynamic_id":"[REDACTED]"`, `"code":"[REDACTED:string:6]"`, `"note":"[REDACTED:string:16]"`} {
		if !strings.Contains(res.Text, shape) {
			t.Errorf("want %s in %s", shape, res.Text)
		}
	}
	if !strings.Contains(res.Text, `"agent_id":"[REDACTED:string:7:`) {
		t.Errorf("agent_id not correlated: %s", res.Text)
	}
}
