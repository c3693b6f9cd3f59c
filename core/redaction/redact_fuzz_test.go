package redaction_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/redaction"
)

// fuzzKeys are spellings of sensitive keys the registry must all catch.
var fuzzKeys = []string{
	"password", "PassWord", "pass_word", "X-Api-Key", "x.api.key", "API KEY", "ACCESS_TOKEN",
	"refreshToken", "client.secret", "Authorization", "Cookie", "SIGN", "msg_signature",
	"nonce", "captcha", "card_number", "code_url", "session_id", "privateKey", "密码",
	"pw", "db_pass", "passw0rd", "userPswd",
}

// FuzzRedactJSON plants a secret under a sensitive key at a fuzz-chosen
// depth and shape and checks it never survives redaction. It also checks
// that untruncated output is always valid JSON.
func FuzzRedactJSON(f *testing.F) {
	f.Add("hunter2", uint8(0), uint16(0), uint8(0), 0)
	f.Add("s3cr3t\"quote\\slash", uint8(3), uint16(0b1011), uint8(1), 7)
	f.Add("<script>&\u2028", uint8(19), uint16(0xffff), uint8(2), 16)
	f.Add("\xff\xfe invalid utf8", uint8(7), uint16(0b0110), uint8(3), -5)
	f.Add("Bearer eyJhbGciOiJIUzI1NiJ9.eyJ9.sig", uint8(11), uint16(1), uint8(0), 40)

	f.Fuzz(func(t *testing.T, seed string, keyIdx uint8, shape uint16, kind uint8, depth int) {
		secret := "@@" + seed + "@@PLANT" // distinctive, at least 8 bytes
		key := fuzzKeys[int(keyIdx)%len(fuzzKeys)]

		var planted any = secret
		switch kind % 4 {
		case 1:
			planted = map[string]any{"inner": secret, "n": 1}
		case 2:
			planted = []any{secret, []any{secret}}
		case 3:
			planted = []any{map[string]any{"x": secret}}
		}
		var doc any = map[string]any{"id": 7, key: planted, "after": "ok"}
		for i := range max(0, depth%12) {
			if shape>>(i%16)&1 == 0 {
				doc = map[string]any{"data": doc, "meta": map[string]any{"page": i}}
			} else {
				doc = []any{1, "x", doc, []any{}}
			}
		}
		data, err := json.Marshal(doc)
		require.NoError(t, err)

		var r redaction.Redactor
		res, err := r.RedactJSON(data)
		require.NoError(t, err, "input %s", data)
		require.True(t, json.Valid([]byte(res.Text)), "output %s", res.Text)

		escaped, err := json.Marshal(secret)
		require.NoError(t, err)
		for _, s := range []string{secret, strings.Trim(string(escaped), `"`)} {
			require.NotContains(t, res.Text, s, "input %s", data)
		}
		require.Contains(t, res.Text, redaction.Redacted, "input %s", data)
		require.Contains(t, res.Text, `"after":"ok"`, "neighbours are kept: input %s", data)
	})
}

// FuzzRedactJSONAnyInput feeds arbitrary bytes: RedactJSON must not panic,
// and whatever it accepts it must turn into valid JSON.
func FuzzRedactJSONAnyInput(f *testing.F) {
	f.Add([]byte(`{"a":[{"password":"x"},[1,2.5e-3,null]],"b":"https://x/y?sign=1"}`))
	f.Add([]byte(`[[[[]]],{},"\u00e9\"",-0.0]`))
	f.Add([]byte(`{"a":`))
	f.Add([]byte(`{"k":"AKIAIOSFODNN7EXAMPLE","t":"x ghp_16C7e42F292c6912E7710c838347Ae178B4a_","pass":[1]}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		r := redaction.Redactor{MaxBytes: 1 << 20}
		res, err := r.RedactJSON(data)
		if err != nil {
			require.ErrorIs(t, err, redaction.ErrInvalidJSON)
			require.False(t, json.Valid(data), "valid input rejected: %q", data)
			return
		}
		require.True(t, json.Valid([]byte(res.Text)), "input %q output %q", data, res.Text)
	})
}
