package redaction_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/redaction"
)

// plant is a distinctive value that must never survive redaction.
func plantKey(name string) string { return "PLANT-" + name + "-9f3a" }

// The keys real payment, login and integration payloads use: each was
// logged verbatim on the payment route.
var paymentKeys = []string{
	"bank_card_no", "bankCardNo", "creditCard", "cvv2", "security_code", "idCardNo", "payPwd",
	"loginPwd", "pin_code", "passcode", "qr_url", "payment_link", "cashier_url", "otp_code",
	"smsVerifyCode", "captcha_code", "BankAccount", "account_number", "prepayId", "h5_url",
	"deep_link", "银行卡号", "身份证号", "支付密码", "jwt", "secretKey",
}

func TestSensitiveNamesByMeaning(t *testing.T) {
	t.Parallel()
	r := redaction.Redactor{}
	for _, key := range paymentKeys {
		body := `{"order_no":"ORD-1","` + key + `":"` + plantKey(key) + `","amount":"12.50"}`
		res := r.Summarise(redaction.PolicyPayment, redaction.Body{ContentType: "application/json", Data: []byte(body)})
		require.Equal(t, redaction.ModeJSON, res.Mode, "key %s", key)
		require.NotContains(t, res.Text, plantKey(key), "key %s leaked: %s", key, res.Text)
		require.Contains(t, res.Text, `"order_no":"ORD-1"`, "key %s", key)
		require.Contains(t, res.Text, `"amount":"12.50"`, "key %s", key)
	}
}

// luhnCard is a Luhn-valid 16-digit number; idNumber an 18-digit 身份证
// number with a valid check digit.
const (
	luhnCard = "6222021234567894"
	idNumber = "11010519491231002X"
	pemKey   = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAplantedPEMbody\n-----END RSA PRIVATE KEY-----"
)

func TestSecretValuesUnderInnocentKeys(t *testing.T) {
	t.Parallel()
	r := redaction.Redactor{}
	for _, tc := range []struct{ name, json, secret string }{
		{"userinfo", `{"hook":"https://admin:S3cretUI@host/x"}`, "S3cretUI"},
		{"fragment token", `{"redirect":"https://app/cb#access_token=FRAGTOK123&state=1"}`, "FRAGTOK123"},
		{"pair in text", `{"note":"password=NotePass99"}`, "NotePass99"},
		{"pair with colon", `{"note":"the pin: 4419 was typed"}`, "4419"},
		{"dsn", `{"target":"postgres://app:DsnPass77@db/x"}`, "DsnPass77"},
		{"mysql dsn", `{"target":"app:MyDsnPw@tcp(db:3306)/x"}`, "MyDsnPw"},
		{"pem", `{"material":"` + strings.ReplaceAll(pemKey, "\n", `\n`) + `"}`, "plantedPEMbody"},
		{"json in string", `{"payload":"{\"password\":\"InnerPw55\",\"amount\":3}"}`, "InnerPw55"},
		{"form in string", `{"raw":"a=1&token=FormTok66&b=2"}`, "FormTok66"},
		{"header array", `{"headers":[["Authorization","Bearer HdrTok77abc"],["Cookie","sid=CookieVal88"]]}`, "HdrTok77abc"},
		{"header array cookie", `{"headers":[["Cookie","sid=CookieVal88"]]}`, "CookieVal88"},
		{"header object", `{"headers":[{"name":"X-Api-Key","value":"ObjKey99"}]}`, "ObjKey99"},
		{"header object reversed", `{"headers":[{"value":"ObjKey98","name":"X-Api-Key"}]}`, "ObjKey98"},
		{"basic anywhere", `{"note":"sent Basic dXNlcjpCYXNpY1B3ZA== upstream"}`, "dXNlcjpCYXNpY1B3ZA=="},
		{"bearer anywhere", `{"note":"sent bearer AbcDefGhi123 upstream"}`, "AbcDefGhi123"},
		{"card in remark", `{"remark":"pay with ` + luhnCard + ` please"}`, luhnCard},
		{"card with spaces", `{"remark":"card 6222 0212 3456 7894"}`, "6222 0212 3456 7894"},
		{"card as number", `{"n":` + luhnCard + `}`, luhnCard},
		{"id number", `{"remark":"身份证 ` + idNumber + ` 已核验"}`, idNumber},
	} {
		res, err := r.RedactJSON([]byte(tc.json))
		require.NoError(t, err, tc.name)
		require.NotContains(t, res.Text, tc.secret, "%s: %s", tc.name, res.Text)
		require.Contains(t, res.Text, redaction.Redacted, tc.name)
	}
}

// Values that only look like secrets stay: operators read them.
func TestOperatorFieldsStayReadable(t *testing.T) {
	t.Parallel()
	r := redaction.Redactor{}
	for _, tc := range []struct {
		policy redaction.Policy
		json   string
	}{
		{redaction.PolicyDefault, `{"token_type":"Bearer","expires_in":7200,"sign_type":"RSA2"}`},
		{redaction.PolicyPayment, `{"order_no":"2024070112345678","out_trade_no":"6222021234567894","channel":"wechat","amount":"12.50","result_code":"SUCCESS","code":"PAY_OK"}`},
		{redaction.PolicyDefault, `{"error":{"code":"UNAUTHENTICATED","message":"未登录或登录已过期：请在 Authorization 头中携带有效的 Bearer 令牌后重试","request_id":"r-1"}}`},
		{redaction.PolicyConfig, `{"items":[{"key":"payment.wechat.mch_key","module":"payment","sensitive":true},{"key":"auth.token_ttl","module":"auth"}]}`},
		{redaction.PolicyDefault, `{"created_at":"2024-07-01T10:00:00Z","phone_count":3,"note":"deliver to gate 4, basic info only"}`},
	} {
		res := r.Summarise(tc.policy, redaction.Body{ContentType: "application/json", Data: []byte(tc.json)})
		require.Equal(t, tc.json, res.Text, "policy %s", tc.policy)
	}
}

func TestQuerySemicolonSeparator(t *testing.T) {
	t.Parallel()
	var r redaction.Redactor
	require.Equal(t, "a=1;password=[REDACTED]&b=2", r.RedactQuery("a=1;password=SemiPw11&b=2"))
	require.Equal(t, "cb=[REDACTED]", r.RedactQuery("cb=https%3A%2F%2Fapp%2Fx%23access_token%3Dzz"))
}

// Login and token responses keep only the outcome and subject identifiers.
func TestLoginResponseKeepsOutcomeOnly(t *testing.T) {
	t.Parallel()
	r := redaction.Redactor{}
	body := `{"ok":true,"user_id":"u-1","phone":"13800138000","email":"a@example.com","real_name":"张三",` +
		`"data":{"nickname":"Al","roles":["admin"],"expires_in":7200,"token_type":"Bearer"},"code":"LOGIN_OK"}`
	res := r.Summarise(redaction.PolicyLogin, redaction.Body{ContentType: "application/json", Data: []byte(body), Response: true})
	require.Equal(t, `{"ok":true,"user_id":"u-1","phone":"[REDACTED:string:11]","email":"[REDACTED:string:13]","real_name":"[REDACTED:string:2]",`+
		`"data":{"nickname":"[REDACTED:string:2]","roles":["[REDACTED:string:5]"],"expires_in":7200,"token_type":"Bearer"},"code":"LOGIN_OK"}`, res.Text)
}

func TestRedactTextKeepsErrorCauses(t *testing.T) {
	t.Parallel()
	var r redaction.Redactor
	for _, s := range []string{
		"http Unauthorized: UNAUTHENTICATED: auth: unauthenticated: no bearer token in the authorization header",
		"http Unauthorized: UNAUTHENTICATED: auth: unauthenticated: token has invalid claims: token is expired",
		"http Forbidden: FORBIDDEN: auth: principal lacks role super_admin",
	} {
		require.Equal(t, s, r.RedactText(s))
	}
	out := r.RedactText("dial postgres://app:TxtDsnPw@db/x failed; card " + luhnCard)
	require.NotContains(t, out, "TxtDsnPw")
	require.NotContains(t, out, luhnCard)
	require.Contains(t, out, "failed")
}

func TestKeyedHashCorrelates(t *testing.T) {
	t.Parallel()
	r := redaction.Redactor{HashKey: []byte("k"), HashRedacted: true}
	res, err := r.RedactJSON([]byte(`{"password":"same","pwd":"same","token":"other"}`))
	require.NoError(t, err)
	require.NotContains(t, res.Text, "same")
	require.Regexp(t, `^\{"password":"\[REDACTED:([0-9a-f]{12})\]","pwd":"\[REDACTED:([0-9a-f]{12})\]","token":"\[REDACTED:[0-9a-f]{12}\]"\}$`, res.Text)
	parts := strings.Split(res.Text, `"`)
	require.Equal(t, parts[3], parts[7], "equal secrets hash equally")
	require.NotEqual(t, parts[3], parts[11])
}

// REGRESSION (review): with hashed redactions a JSON document inside a
// string came out verbatim, because the nested result was checked for the
// plain [REDACTED] marker.
func TestHashedRedactionInsideJSONString(t *testing.T) {
	t.Parallel()

	r := &redaction.Redactor{HashKey: []byte("0123456789abcdef0123456789abcdef"), HashRedacted: true}
	res, err := r.RedactJSON([]byte(`{"data":"{\"password\":\"hunter2\"}"}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Text, "hunter2") {
		t.Fatalf("a secret inside a JSON string leaked with hashed redactions: %s", res.Text)
	}
}
