package redaction_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/redaction"
)

// REGRESSION: short and leet spellings of "password" were logged in
// clear under the payment policy, and so was an AWS-style access key under
// a neutral name.
var shortPasswordKeys = []string{
	"pw", "PW", "user_pw", "loginPw", "pw2", "pass", "Pass", "db_pass", "userPass", "smtp-pass", "pass1",
	"passw0rd", "Passw0rd", "new_passw0rd", "pa55word", "p4ssword", "pa55w0rd", "pswd", "pword", "passwort",
}

func TestShortPasswordNames(t *testing.T) {
	t.Parallel()
	r := redaction.Redactor{}
	for _, p := range []redaction.Policy{redaction.PolicyPayment, redaction.PolicyDefault, redaction.PolicyLogin} {
		for _, key := range shortPasswordKeys {
			body := `{"order_no":"ORD-1","` + key + `":"` + plantKey(key) + `","amount":"12.50"}`
			res := r.Summarise(p, redaction.Body{ContentType: "application/json", Data: []byte(body)})
			require.NotContains(t, res.Text, plantKey(key), "policy %s key %s leaked: %s", p, key, res.Text)
			if p != redaction.PolicyLogin { // login keeps no order numbers
				require.Contains(t, res.Text, `"order_no":"ORD-1"`, "key %s", key)
			}
		}
	}
	// The same names in forms, query strings and free text.
	require.Equal(t, "user=a&pw=[REDACTED]&pass=[REDACTED]", r.RedactQuery("user=a&pw=QryPw1&pass=QryPass2"))
	require.NotContains(t, r.RedactText("login failed: passw0rd=TxtPw0rd9 for user a"), "TxtPw0rd9")
}

// Ordinary fields that contain "pass" or "pw" as part of a longer word stay
// readable: a redaction of every passenger would blind operators.
func TestShortPasswordNamesNoFalsePositives(t *testing.T) {
	t.Parallel()
	r := redaction.Redactor{}
	reg := redaction.Default()
	for _, key := range []string{
		"passenger", "passengerName", "passenger_count", "compass", "compass_heading", "bypass", "bypass_cache",
		"passage", "passive", "passed", "passport_photo_url_count", "pass_rate", "pass_count", "pass_through",
		"surpass", "trespass", "impasse", "pwm", "power", "spawn", "pwa", "sweep",
	} {
		require.False(t, reg.IsSensitive(key), "key %s is an ordinary field", key)
		body := `{"` + key + `":"visible-value"}`
		res := r.Summarise(redaction.PolicyDefault, redaction.Body{ContentType: "application/json", Data: []byte(body)})
		require.Equal(t, body, res.Text, "key %s", key)
	}
}

// Cloud access keys are credentials by their shape, whatever key holds them.
func TestCloudAccessKeyUnderNeutralName(t *testing.T) {
	t.Parallel()
	r := redaction.Redactor{}
	for _, secret := range []string{
		"AKIAIOSFODNN7EXAMPLE",                     // AWS long-term access key id
		"ASIAY34FZKBOKMUTVV7A",                     // AWS temporary (STS) access key id
		"ghp_16C7e42F292c6912E7710c838347Ae178B4a", // GitHub personal access token
		"sk_live_4eC39HqLyjWDarjtT1zdp7dc",         // Stripe live secret key
	} {
		for _, body := range []string{
			`{"note":"` + secret + `","amount":"1.00"}`,
			`{"env":["REGION=cn-north-1","` + secret + `"]}`,
			`{"note":"rotated ` + secret + ` yesterday"}`,
		} {
			res := r.Summarise(redaction.PolicyPayment, redaction.Body{ContentType: "application/json", Data: []byte(body)})
			require.NotContains(t, res.Text, secret, "body %s: %s", body, res.Text)
			require.Contains(t, res.Text, "[REDACTED", "body %s", body)
		}
		require.NotContains(t, r.RedactText("upstream said key "+secret+" is invalid"), secret)
	}
	// Words that start the same way are not keys.
	for _, body := range []string{
		`{"region":"ASIA","note":"AKIA is a prefix","city":"ASIA-PACIFIC-SOUTHEAST"}`,
		`{"sku":"AKIA-12","desk":"sk_live_demo"}`,
	} {
		res := r.Summarise(redaction.PolicyDefault, redaction.Body{ContentType: "application/json", Data: []byte(body)})
		require.Equal(t, body, res.Text)
	}
}
