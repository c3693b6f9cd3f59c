package redaction_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/redaction"
)

const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlLXNlY3JldA"

func TestRedactJSON(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "FlatKeepsOrderAndNumbers",
			in:   `{"z":1,"password":"hunter2","a":1.50e3,"big":12345678901234567890}`,
			want: `{"z":1,"password":"[REDACTED]","a":1.50e3,"big":12345678901234567890}`,
		},
		{
			name: "CaseAndSeparatorVariants",
			in:   `{"PassWord":"p1","X-Api-Key":"k1","ACCESS_TOKEN":"t1","refreshToken":"t2","user":"bob"}`,
			want: `{"PassWord":"[REDACTED]","X-Api-Key":"[REDACTED]","ACCESS_TOKEN":"[REDACTED]","refreshToken":"[REDACTED]","user":"bob"}`,
		},
		{
			name: "AnyValueTypeIsReplacedWhole",
			in:   `{"secret":{"a":[1,2]},"token":[1,"x"],"pin":1234,"sign":null,"ok":true}`,
			want: `{"secret":"[REDACTED]","token":"[REDACTED]","pin":"[REDACTED]","sign":"[REDACTED]","ok":true}`,
		},
		{
			name: "ArraysOfObjectsOfArrays",
			in:   `{"items":[{"id":1,"cards":[{"cvv":"123","last4":"4242"}]},[[{"apiKey":"k"}]]]}`,
			want: `{"items":[{"id":1,"cards":[{"cvv":"[REDACTED]","last4":"4242"}]},[[{"apiKey":"[REDACTED]"}]]]}`,
		},
		{
			name: "TopLevelArray",
			in:   ` [ {"session_id" : "s1"} , 2 ] `,
			want: `[{"session_id":"[REDACTED]"},2]`,
		},
		{
			name: "EscapedKey",
			in:   `{"pass\u0077ord":"p","a\"b":"c"}`,
			want: `{"pass\u0077ord":"[REDACTED]","a\"b":"c"}`,
		},
		{
			name: "CredentialValuesUnderPlainKeys",
			in:   `{"h":"Bearer abc.def","j":"` + jwt + `","note":"see https://pay.example/x?order=1&sign=abc","plain":"https://example.com/a?page=2"}`,
			want: `{"h":"[REDACTED]","j":"[REDACTED]","note":"[REDACTED]","plain":"https://example.com/a?page=2"}`,
		},
		{
			name: "NestedSignedURL",
			in:   `{"next":"https://a.example/cb?redirect=https%3A%2F%2Fb.example%2Fd%3Ftoken%3Dt0"}`,
			want: `{"next":"[REDACTED]"}`,
		},
		{
			name: "DataURLAndBlob",
			in:   `{"img":"data:image/png;base64,iVBORw0KGgo=","b":"` + strings.Repeat("QUJD", 300) + `"}`,
			want: `{"img":"[REDACTED]","b":"[REDACTED]"}`,
		},
		{
			name: "ErrorCodesStay",
			in:   `{"code":"E_OK","result_code":"SUCCESS","message":"签名校验通过"}`,
			want: `{"code":"E_OK","result_code":"SUCCESS","message":"签名校验通过"}`,
		},
		{
			name: "Scalar",
			in:   `"plain"`,
			want: `"plain"`,
		},
	}
	var r redaction.Redactor
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			res, err := r.RedactJSON([]byte(tt.in))
			require.NoError(t, err, "input %s", tt.in)
			require.Equal(t, tt.want, res.Text, "input %s", tt.in)
			require.Equal(t, redaction.ModeJSON, res.Mode)
			require.False(t, res.Truncated)
			require.True(t, json.Valid([]byte(res.Text)), "output %s", res.Text)
		})
	}
}

func TestRedactJSONInvalid(t *testing.T) {
	t.Parallel()

	for _, in := range []string{``, `{"password":"hunter2"`, `{"password":"hunter2"} trailing`, `hunter2`, "\xff"} {
		t.Run(in, func(t *testing.T) {
			t.Parallel()

			var r redaction.Redactor
			res, err := r.RedactJSON([]byte(in))
			require.ErrorIs(t, err, redaction.ErrInvalidJSON, "input %q", in)
			require.Empty(t, res.Text, "input %q", in)
			require.NotContains(t, err.Error(), "hunter2")
		})
	}
}

func TestRedactJSONTruncatesAfterRedaction(t *testing.T) {
	t.Parallel()

	// The secret straddles the cap: cutting first would log its prefix.
	secret := strings.Repeat("s", 200)
	in := `{"note":"` + strings.Repeat("é", 40) + `","password":"` + secret + `","tail":"` + strings.Repeat("日本", 100) + `"}`
	for limit := 60; limit <= 140; limit++ {
		r := redaction.Redactor{MaxBytes: limit}
		res, err := r.RedactJSON([]byte(in))
		require.NoError(t, err)
		require.True(t, res.Truncated, "limit %d", limit)
		require.LessOrEqual(t, len(res.Text), limit, "limit %d", limit)
		require.True(t, utf8.ValidString(res.Text), "limit %d: %q", limit, res.Text)
		require.NotContains(t, res.Text, "sss", "limit %d", limit)
	}

	var r redaction.Redactor // DefaultMaxBytes
	big := `{"blob":"` + strings.Repeat("é", 30*1024) + `"}`
	res, err := r.RedactJSON([]byte(big))
	require.NoError(t, err)
	require.True(t, res.Truncated)
	require.LessOrEqual(t, len(res.Text), redaction.DefaultMaxBytes)
	require.Greater(t, len(res.Text), redaction.DefaultMaxBytes-4)
	require.True(t, utf8.ValidString(res.Text))
}
