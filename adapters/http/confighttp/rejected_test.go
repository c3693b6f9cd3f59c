package confighttp_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/sysconfig"
)

// Every PUT the handler refuses itself leaves one rejected audit record
// with the answered code; a 401 leaves none (no subject to record).
func TestHandlerRejectionsAreAudited(t *testing.T) {
	t.Parallel()
	const path = "/api/v1/system-configs/pay.limit.daily"
	tests := []struct {
		name, path, user, body string
		headers                []string
		status                 int
		code                   string
		resource               string // "" means no audit record
	}{
		{"malformed json", path, admin, `{"value":`, nil, 400, httpx.CodeRequestInvalid, "pay.limit.daily"},
		{"not an object", path, admin, `[5]`, nil, 400, httpx.CodeRequestInvalid, "pay.limit.daily"},
		{"unknown field", path, admin, `{"value":5,"extra":1}`, nil, 400, httpx.CodeRequestInvalid, "pay.limit.daily"},
		{"missing value", path, admin, `{"version":0}`, nil, 400, httpx.CodeRequestInvalid, "pay.limit.daily"},
		{"negative version", path, admin, `{"value":5,"version":-1}`, nil, 400, httpx.CodeRequestInvalid, "pay.limit.daily"},
		{"wrong content type", path, admin, `{"value":5}`, []string{"Content-Type", "text/plain"}, 415, httpx.CodeUnsupportedMedia, "pay.limit.daily"},
		{"bad if-match", path, admin, `{"value":5}`, []string{"If-Match", `W/"0"`}, 400, httpx.CodeRequestInvalid, "pay.limit.daily"},
		{"mismatched if-match", path, admin, `{"value":5,"version":0}`, []string{"If-Match", `"1"`}, 400, httpx.CodeRequestInvalid, "pay.limit.daily"},
		{"body too large", path, admin, `{"value":"` + strings.Repeat("x", 2<<20) + `"}`, nil, 413, httpx.CodeBodyTooLarge, "pay.limit.daily"},
		{"malformed key", "/api/v1/system-configs/PAY", admin, `{"value":5}`, nil, 400, httpx.CodeRequestInvalid, "PAY"},
		{"unprintable key", "/api/v1/system-configs/%E4%B8%AD", admin, `{"value":5}`, nil, 400, httpx.CodeRequestInvalid, "invalid_key"},
		{"unauthenticated", path, "", `{"value":`, nil, 401, httpx.CodeUnauthenticated, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			res := b.do(t, http.MethodPut, tt.path, tt.user, tt.body, tt.headers...)
			require.Equal(t, tt.status, res.status, "%s: %.300s", tt.name, res.body)
			require.Equal(t, tt.code, code(t, res), tt.name)
			audits := b.store.Audits()
			if tt.resource == "" {
				require.Empty(t, audits, "%s: an unauthenticated caller is not an actor", tt.name)
				return
			}
			require.Len(t, audits, 1, tt.name)
			a := audits[0]
			require.Equal(t, string(sysconfig.OutcomeRejected), a.Outcome, tt.name)
			require.Equal(t, tt.code, a.Code, tt.name)
			require.Equal(t, "root", a.Actor, tt.name)
			require.Equal(t, tt.resource, a.ResourceID, tt.name)
			require.Equal(t, res.header.Get(httpx.HeaderRequestID), a.RequestID, tt.name)
			require.NotEmpty(t, a.Reason, tt.name)
			require.NotContains(t, a.Reason, "xxxx", "%s: the reason carries no value", tt.name)
		})
	}
}

// An audit that cannot be written never changes the caller's answer.
func TestRejectionAnsweredWhenAuditFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.store.FailNextAudit()
	res := b.do(t, http.MethodPut, "/api/v1/system-configs/pay.limit.daily", admin, `{"value":`)
	require.Equal(t, http.StatusBadRequest, res.status, res.body)
	require.Equal(t, httpx.CodeRequestInvalid, code(t, res))
	require.Empty(t, b.store.Audits(), "the failed audit wrote nothing")
}
