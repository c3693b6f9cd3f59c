package redaction_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/redaction"
)

// spellings are the ways real payloads write a rule's words.
func spellings(r redaction.Rule) []string {
	switch {
	case len(r.Words) > 0:
		camel := "my"
		for _, w := range r.Words {
			camel += strings.ToUpper(w[:1]) + w[1:]
		}
		return []string{
			strings.Join(r.Words, "_"), "my_" + strings.Join(r.Words, "_") + "_v", camel,
			strings.ToUpper(strings.Join(r.Words, "-")), strings.Join(r.Words, "."), strings.Join(r.Words, "_") + "2",
		}[:6-btoi(strings.ContainsAny(r.Words[len(r.Words)-1], "0123456789"))]
	case r.Name != "":
		return []string{r.Name, strings.ToUpper(r.Name), "X-" + r.Name}
	default:
		return []string{r.Part, "new" + r.Part, "旧" + r.Part + "Value"}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// allowedOn reports an allow rule for name on p.
func allowedOn(name string, p redaction.Policy) bool {
	for _, r := range redaction.BuiltinRules {
		if r.Allow && r.Name == name && (len(r.Policies) == 0 || slices.Contains(r.Policies, p)) {
			return true
		}
	}
	return false
}

func policiesOf(r redaction.Rule) []redaction.Policy {
	if len(r.Policies) > 0 {
		return r.Policies
	}
	return []redaction.Policy{redaction.PolicyDefault, redaction.PolicyLogin, redaction.PolicyPayment, redaction.PolicyConfig}
}

// TestRuleTable runs every rule of the table: a sensitive rule matches each
// spelling of its words under its policies; an allow rule keeps its name
// readable there.
func TestRuleTable(t *testing.T) {
	t.Parallel()
	var r redaction.Redactor
	for _, rule := range redaction.BuiltinRules {
		t.Run(fmt.Sprintf("%v%s%s", rule.Words, rule.Name, rule.Part), func(t *testing.T) {
			t.Parallel()
			for _, p := range policiesOf(rule) {
				if p == redaction.PolicyCallback || p == redaction.PolicyOpaque || !rule.Allow && allowedOn(rule.Name, p) {
					continue // summaries only; or the allow list wins
				}
				if rule.Allow && p != redaction.PolicyDefault && p != redaction.PolicyConfig {
					continue // default-deny policies keep only declared fields: deny_test.go
				}
				if rule.Allow {
					body := `{"` + rule.Name + `":"visible-value"}`
					res := r.Summarise(p, redaction.Body{ContentType: "application/json", Data: []byte(body)})
					require.Equal(t, body, res.Text, "policy %s", p)
					continue
				}
				for _, key := range spellings(rule) {
					if rule.Name != "" && key == "X-"+rule.Name && strings.HasPrefix(rule.Name, "x") {
						continue
					}
					body := `{"` + key + `":"visible-value"}`
					res := r.Summarise(p, redaction.Body{ContentType: "application/json", Data: []byte(body)})
					require.NotContains(t, res.Text, "visible-value", "policy %s key %q", p, key)
				}
			}
		})
	}
}

// TestPolicyRulesStayInTheirPolicy: a policy's additions do not leak onto
// the default route, where code, card and url are ordinary names.
func TestPolicyRulesStayInTheirPolicy(t *testing.T) {
	t.Parallel()
	body := `{"code":"E1","card":"SIM-1","url":"https://x.example/a","state":"open","content":"hi"}`
	var r redaction.Redactor
	res := r.Summarise(redaction.PolicyDefault, redaction.Body{ContentType: "application/json", Data: []byte(body)})
	require.Equal(t, body, res.Text)
}

// A domain adds a rule or an allow-list entry in the same form.
func TestRegistryWith(t *testing.T) {
	t.Parallel()
	reg := redaction.Default().With(redaction.Word("member", "no"), redaction.Allowed("refresh_token_ttl"),
		redaction.Word("coupon").On(redaction.PolicyPayment))
	r := redaction.Redactor{Registry: reg}
	res, err := r.RedactJSON([]byte(`{"memberNo":"M-1","refresh_token_ttl":60,"coupon":"C-1","refresh_token":"r"}`))
	require.NoError(t, err)
	require.Equal(t, `{"memberNo":"[REDACTED]","refresh_token_ttl":60,"coupon":"C-1","refresh_token":"[REDACTED]"}`, res.Text)
	res = r.Summarise(redaction.PolicyPayment, redaction.Body{ContentType: "application/json", Data: []byte(`{"coupon":"C-1"}`)})
	require.Equal(t, `{"coupon":"[REDACTED]"}`, res.Text)
	require.False(t, redaction.Default().IsSensitive("memberNo"), "the default registry is unchanged")
}
