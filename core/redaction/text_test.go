package redaction_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/redaction"
)

func TestRedactText(t *testing.T) {
	t.Parallel()

	r := &redaction.Redactor{}
	for _, tc := range []struct {
		in      string
		secrets []string
		keep    []string
	}{
		{"dial tcp: password=hunter2 host=db", []string{"hunter2"}, []string{"dial", "host=db"}},
		{"upstream said Authorization: Bearer abc.def.ghi-XYZ", []string{"abc.def.ghi-XYZ"}, []string{"upstream"}},
		{`bad body {"token":"tok-123456789","amount":5}`, []string{"tok-123456789"}, []string{"amount"}},
		{"redirect to https://pay.example.com/p?sign=zzz999 failed", []string{"sign=zzz999"}, []string{"redirect", "failed"}},
		{"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlLXZhbHVl rejected", []string{"eyJhbGciOiJIUzI1NiJ9"}, []string{"rejected"}},
		{"client_secret: s3cr3t-value", []string{"s3cr3t-value"}, nil},
		{"connection refused", nil, []string{"connection refused"}},
	} {
		out := r.RedactText(tc.in)
		for _, s := range tc.secrets {
			require.NotContains(t, out, s, "input %q", tc.in)
		}
		for _, k := range tc.keep {
			require.Contains(t, out, k, "input %q", tc.in)
		}
	}
}
