package redaction_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/redaction"
)

func TestRegistryIsSensitive(t *testing.T) {
	t.Parallel()

	tests := []struct {
		key  string
		want bool
	}{
		{"password", true},
		{"PassWord", true},
		{"new_password", true},
		{"X-Api-Key", true},
		{"x.api.key", true},
		{"API-KEY", true},
		{"apiKey", true},
		{"api key", true},
		{"ACCESS_TOKEN", true},
		{"refreshToken", true},
		{"Authorization", true},
		{"Proxy-Authorization", true},
		{"Set-Cookie", true},
		{"client.secret", true},
		{"X-Amz-Signature", true},
		{"X-Amz-Credential", true},
		{"sign", true},
		{"nonce", true},
		{"echostr", true},
		{"captcha", true},
		{"smsCode", true},
		{"card_number", true},
		{"code_url", true},
		{"prepay_id", true},
		{"presignedUrl", true},
		{"EncodingAESKey", true},
		{"登录密码", true},
		{"code", false},
		{"result_code", false},
		{"error_code", false},
		{"username", false},
		{"order_no", false},
		{"amount", false},
		{"x", false},
		{"xray", false},
		{"", false},
	}
	reg := redaction.Default()
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.want, reg.IsSensitive(tt.key), "IsSensitive(%q)", tt.key)
		})
	}
}

func TestNewRegistryExtra(t *testing.T) {
	t.Parallel()

	reg := redaction.NewRegistry("Member-No")
	require.True(t, reg.IsSensitive("member_no"), "extra key, other spelling")
	require.True(t, reg.IsSensitive("X-Member-No"), "extra key behind an X- prefix")
	require.True(t, reg.IsSensitive("password"), "built-ins stay")
	require.False(t, redaction.Default().IsSensitive("member_no"), "Default is not changed by NewRegistry")
}
