package redaction_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/redaction"
)

func TestRedactQuery(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in, want string
	}{
		{"", ""},
		{"page=2&size=10", "page=2&size=10"},
		{"b=1&access_token=abc&a=2", "b=1&access_token=[REDACTED]&a=2"},
		{"X-Amz-Signature=f00&X-Amz-Credential=AKIA%2F1&X-Amz-Expires=60", "X-Amz-Signature=[REDACTED]&X-Amz-Credential=[REDACTED]&X-Amz-Expires=60"},
		{"API%2DKEY=k&q=a+b", "API%2DKEY=[REDACTED]&q=a+b"},
		{"refreshToken=r&refreshToken=r2", "refreshToken=[REDACTED]&refreshToken=[REDACTED]"},
		{"redirect=https%3A%2F%2Fx.example%2Fy%3Fsign%3Ds", "redirect=[REDACTED]"},
		{"auth=Bearer%20abcdefgh", "auth=[REDACTED]"},
		{"q=" + jwt, "q=[REDACTED]"},
		{jwt, "[REDACTED]"},
		{"bad=%zz&password=%zz&flag", "bad=%zz&password=[REDACTED]&flag"},
		{"password", "password"},
		{"a=1&&b=2&", "a=1&&b=2&"},
	}
	var r redaction.Redactor
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.want, r.RedactQuery(tt.in), "RedactQuery(%q)", tt.in)
		})
	}
}

func TestRedactForm(t *testing.T) {
	t.Parallel()

	var r redaction.Redactor
	res := r.RedactForm([]byte("username=bob&Pass_Word=hunter2&captcha=9981"))
	require.Equal(t, "username=bob&Pass_Word=[REDACTED]&captcha=[REDACTED]", res.Text)
	require.Equal(t, redaction.ModeForm, res.Mode)

	capped := redaction.Redactor{MaxBytes: 16}
	res = capped.RedactForm([]byte("password=" + strings.Repeat("x", 64) + "&note=" + strings.Repeat("n", 64)))
	require.True(t, res.Truncated)
	require.Equal(t, "password=[REDACT", res.Text, "cut after redaction")
}

func TestRedactHeaders(t *testing.T) {
	t.Parallel()

	h := http.Header{}
	h.Set("Authorization", "Bearer abcdefgh")
	h.Add("Cookie", "sid=1")
	h.Add("Cookie", "theme=dark")
	h.Set("X-Api-Key", "k-123")
	h.Set("X-Request-Id", "req-1")
	h.Set("X-Forwarded", "Bearer zzzzzzzz")
	h.Set("Content-Type", "application/json")

	var r redaction.Redactor
	got := r.RedactHeaders(h)
	require.Equal(t, map[string][]string{
		"Authorization": {redaction.Redacted},
		"Cookie":        {redaction.Redacted, redaction.Redacted},
		"X-Api-Key":     {redaction.Redacted},
		"X-Request-Id":  {"req-1"},
		"X-Forwarded":   {redaction.Redacted},
		"Content-Type":  {"application/json"},
	}, got)
	require.Equal(t, "Bearer abcdefgh", h.Get("Authorization"), "input must not be modified")
}
