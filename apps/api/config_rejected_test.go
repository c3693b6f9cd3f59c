package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/sysconfig"
)

// Every rejected update leaves an audit record (a public contract of the
// config API), including the
// ones the HTTP layer refuses before the service pipeline. Each case uses
// its own key so its records are counted alone.
func TestHandlerRejectionsAreAudited(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	tests := []struct {
		name, key, body string
		header          map[string]string
		status          int
		code            string
	}{
		{"malformed json", keyCount, `{"value":`, nil, 400, httpx.CodeRequestInvalid},
		{"missing value", keyText, `{"version":0}`, nil, 400, httpx.CodeRequestInvalid},
		{"wrong content type", keyFlag, `{"value":true}`, map[string]string{"Content-Type": "text/plain"}, 415, httpx.CodeUnsupportedMedia},
		{"bad if-match", keyDoc, `{"value":{}}`, map[string]string{"If-Match": "0"}, 400, httpx.CodeRequestInvalid},
		{"mismatched if-match", keyMode, `{"value":"b","version":0}`, map[string]string{"If-Match": `"1"`}, 400, httpx.CodeRequestInvalid},
		{"body too large", keySecret, `{"value":"` + strings.Repeat("x", 2<<20) + `"}`, nil, 413, httpx.CodeBodyTooLarge},
		{"malformed key", "NOT-A-KEY", `{"value":1}`, nil, 400, httpx.CodeRequestInvalid},
	}
	for _, tt := range tests {
		res := a.do(t, apitest.Request{Method: http.MethodPut, Path: configsPath + tt.key, Token: admin(t), Body: tt.body, Header: tt.header})
		require.Equal(t, tt.status, res.Status, "%s: %.300s", tt.name, res.Body)
		require.Equal(t, tt.code, res.Error.Code, tt.name)

		recs := a.audits(t, tt.key)
		require.Len(t, recs, 1, "%s: one audit record", tt.name)
		require.Equal(t, string(sysconfig.OutcomeRejected), recs[0].Outcome, tt.name)
		require.Equal(t, tt.code, recs[0].Code, tt.name)
		require.Equal(t, "admin-1", recs[0].Actor, tt.name)
		require.Equal(t, configsvc.ResourceType, recs[0].ResourceType, tt.name)
		require.Equal(t, res.Header.Get(httpx.HeaderRequestID), recs[0].RequestID, tt.name)
		_, ok := a.row(t, tt.key)
		require.False(t, ok, "%s: nothing written", tt.name)
	}
}
