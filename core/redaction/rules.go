package redaction

// Rule is one entry of the sensitive-name table. A key is first split into
// words: "bankCardNo", "bank_card_no", "bank-card.no" and "BANK CARD NO"
// are all [bank card no]; a run of non-ASCII text (密码) is one word.
// Exactly one of Words, Name and Part is set.
type Rule struct {
	// Words matches keys holding these lowercase words consecutively:
	// {"bank", "card"} matches bankCardNo and my_bank_card. A key word
	// with trailing digits also matches without them (cvv2 is cvv).
	Words []string
	// Name matches the whole key with its words joined (apiKey is
	// "apikey"), also behind an X- prefix (X-Sign is "sign").
	Name string
	// Part matches any key whose joined words contain it: glued
	// spellings (newpassword) and Chinese terms (支付密码 contains 密码).
	Part string
	// Allow makes a matching Name not sensitive whatever other rules say,
	// and marks its value as an identifier: card and ID-number shapes are
	// not applied to it (credentials still are). Only Name rules allow.
	Allow bool
	// Policies are where the rule applies. Empty: every policy.
	Policies []Policy
}

// Word returns a rule matching consecutive words.
func Word(words ...string) Rule { return Rule{Words: words} }

// Name returns a rule matching a whole joined key.
func Name(name string) Rule { return Rule{Name: name} }

// Part returns a rule matching a substring of the joined key.
func Part(part string) Rule { return Rule{Part: part} }

// Allowed returns an allow-list rule for name on policies (all when none).
func Allowed(name string, policies ...Policy) Rule {
	return Rule{Name: name, Allow: true, Policies: policies}
}

// On returns r restricted to policies.
func (r Rule) On(policies ...Policy) Rule {
	r.Policies = policies
	return r
}

// BuiltinRules is the built-in rule table: the sensitive fields on
// every route (passwords, tokens, sessions, authorization, cookies,
// secrets and keys, signatures, nonces, verification codes, payment
// credentials, private URLs, identity numbers), the route policies'
// additions, and the allow list. Each rule has a test case in
// rules_test.go. It is read-only; build a Registry to add rules.
var BuiltinRules = []Rule{
	// Passwords and PINs.
	Word("password"), Word("passwd"), Word("pwd"), Word("passcode"), Word("passphrase"), Word("pin"),
	Word("pass", "word"), Part("password"), Part("passwd"),
	// Short and leet forms seen in real payloads: pw, pass, pswd, pword, passw0rd. Only
	// whole words: passenger, compass and bypass are ordinary fields.
	Word("pw"), Word("pass"), Word("pswd"), Word("pword"), Word("passw0rd"),
	Part("passw0rd"), Part("pa55word"), Part("pa55w0rd"), Part("p4ssword"), Part("p455w0rd"), Part("passwort"),
	// Tokens, sessions, credentials.
	Word("token"), Part("token"), Word("jwt"), Word("otp"), Word("totp"), Word("hotp"), Word("mfa", "code"),
	Word("session"), Name("sessionid"), Name("jsessionid"), Name("phpsessid"), Name("sid"), Name("ticket"),
	Word("credential"), Word("credentials"), Part("credential"),
	Word("authorization"), Part("authorization"), Name("auth"), Word("cookie"), Part("cookie"),
	// Secrets and keys. Bare "key" only as the whole name: sort_key,
	// cache_key and idempotency_key are not secrets.
	Word("secret"), Part("secret"), Name("key"), Part("apikey"), Part("privatekey"),
	Word("api", "key"), Word("private", "key"), Word("secret", "key"), Word("access", "key"), Word("app", "key"),
	Word("aes", "key"), Name("encodingaeskey"), Word("mch", "key"), Word("merchant", "key"), Word("sign", "key"),
	Word("session", "key"), Word("master", "key"), Word("encrypt", "key"), Word("signing", "key"),
	Name("encrypt"), Name("encrypted"), Word("ciphertext"), Word("cipher", "text"),
	// Signatures and nonces.
	Word("signature"), Part("signature"), Name("sign"), Name("sig"), Word("pay", "sign"), Word("nonce"), Part("nonce"), Name("echostr"),
	// Verification codes. Bare "code" is a result code except on login routes.
	Word("captcha"), Word("verify", "code"), Word("verification", "code"), Word("sms", "code"),
	Word("email", "code"), Word("auth", "code"), Word("otp", "code"), Word("security", "code"),
	Word("check", "code"), Word("pin", "code"), Word("captcha", "code"), Word("verify", "token"),
	Name("vcode"), Name("yzm"), Word("valid", "code"), Word("mobile", "code"), Word("phone", "code"),
	Word("msg", "code"), Name("smscode"), Name("checkcode"), Name("yanzhengma"),
	// 付款码 (a payer's barcode), API v3 keys, signed CDN links, session cookies.
	Word("dynamic", "id"), Word("pay", "code"), Word("payment", "code"), Name("paycode"), Name("barcode").On(PolicyPayment),
	Word("auth", "key"), Name("apiv3key"), Part("apiv3key"), Word("api", "v3", "key"), Word("api", "v2", "key"),
	Name("connect.sid"), Word("sess"), Name("sessid"), Name("koa.sess"), Name("express.sid"),
	// Payment credentials and card data.
	Word("card", "no"), Word("card", "number"), Word("card", "num"), Word("bank", "card"), Word("bank", "account"),
	Word("bank", "no"), Word("account", "number"), Word("account", "no"), Word("credit", "card"), Word("debit", "card"),
	Word("cvv"), Word("cvc"), Word("cvn"), Name("pan"), Word("card", "expiry"), Word("prepay", "id"),
	Word("acct", "no"), Word("acc", "no"), Word("acct", "num"), Name("acctno"), Name("accno"), Name("yhkh"),
	Name("yhzh"), Word("valid", "date"), Word("exp", "date"), Word("expire", "date"), Word("expiry", "date"),
	// Identity numbers.
	Word("id", "card"), Word("identity", "card"), Word("identity", "no"), Word("identity", "number"),
	Word("id", "number"), Word("citizen", "id"), Word("national", "id"), Word("ssn"),
	Name("zjhm"), Name("idcardno"), Name("idcard"), Word("cert", "no"), Word("cert", "num"), Name("sfzh"),
	Name("sfzhm"), Name("passport"), Name("passportno"), Word("passport", "no"), Word("passport", "number"),
	Word("passport", "id"), Part("护照"),
	// Private links: payment pages, QR codes, deep links, signed files.
	Word("qr", "code"), Name("qrcode"), Word("code", "url"),
	Word("qr", "url"), Word("qr", "link"), Word("pay", "url"), Word("pay", "link"), Word("payment", "url"),
	Word("payment", "link"), Word("cashier", "url"), Word("cashier", "link"), Word("mweb", "url"), Word("h5", "url"),
	Word("h5", "link"), Word("deep", "link"), Word("deep", "url"), Name("deeplink"), Word("jump", "url"),
	Word("private", "url"), Word("signed", "url"), Word("presigned", "url"), Word("download", "url"),
	Word("upload", "url"), Word("temp", "url"), Word("tmp", "url"),
	// Chinese terms.
	Part("密码"), Part("口令"), Part("密钥"), Part("私钥"), Part("签名"), Part("验证码"), Part("校验码"),
	Part("动态码"), Part("银行卡"), Part("卡号"), Part("身份证"), Part("证件号"), Part("令牌"), Part("安全码"),
	Part("二维码"), Part("支付链接"),

	// Login and token routes: every code, state and ticket is a secret.
	Word("code").On(PolicyLogin), Word("state").On(PolicyLogin), Word("ticket").On(PolicyLogin), Word("sms").On(PolicyLogin),
	// Payment routes: all card, bank and channel material.
	Name("card").On(PolicyPayment), Word("card", "holder").On(PolicyPayment),
	Word("holder", "name").On(PolicyPayment), Word("expiry").On(PolicyPayment), Word("expire", "date").On(PolicyPayment),
	Word("id", "no").On(PolicyPayment), Word("channel", "key").On(PolicyPayment), Word("pay", "info").On(PolicyPayment),
	Word("pay", "params").On(PolicyPayment), Name("package").On(PolicyPayment), Word("redirect", "url").On(PolicyPayment),
	Word("return", "url").On(PolicyPayment), Name("qr").On(PolicyPayment), Word("cert").On(PolicyPayment),
	// File transfers: contents and any URL.
	Name("content").On(PolicyFileTransfer), Word("file", "content").On(PolicyFileTransfer),
	Word("file", "data").On(PolicyFileTransfer), Word("base64").On(PolicyFileTransfer), Name("blob").On(PolicyFileTransfer),
	Name("chunk").On(PolicyFileTransfer), Name("bytes").On(PolicyFileTransfer), Word("url").On(PolicyFileTransfer),

	// Allow list: names that look sensitive but are not.
	Allowed("pass_rate"), Allowed("pass_count"), Allowed("pass_through"),
	Allowed("token_type"), Allowed("expires_in"), Allowed("refresh_expires_in"), Allowed("sign_type"),
	Allowed("key", PolicyConfig),
	Allowed("code", PolicyDefault, PolicyCallback, PolicyFileTransfer, PolicyOpaque, PolicyConfig),
	Name("code").On(PolicyPayment), // 快捷支付's SMS confirmation; a result code is UPPER_SNAKE
	Allowed("order_no"), Allowed("out_trade_no"), Allowed("trade_no"), Allowed("transaction_id"),
	Allowed("out_refund_no"), Allowed("refund_id"), Allowed("request_id"), Allowed("task_id"),
}

// loginKeep are the members a login or token response keeps: the outcome
// and subject identifiers, which an operator needs to follow a login and
// which hold no secret. Every other scalar is redacted.
var loginKeep = []string{
	"ok", "success", "succeeded", "status", "result", "result_code", "error_code", "errcode", "message", "msg",
	"id", "user_id", "uid", "sub", "subject", "account_id", "tenant_id", "expires_in", "refresh_expires_in",
	"token_type", "request_id",
}
