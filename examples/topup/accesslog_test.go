package topup_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/examples/topup"
)

// The private pay_url (and its signature) never reaches a log line, on
// create, on replay or on read, while the access lines keep request id,
// status and the non-sensitive body fields.
func TestAccessLogKeepsPayURLOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})

	created := e.create(t, "agent-1", "topup-req-0900", createBody)
	require.Equal(t, http.StatusCreated, created.Status, "body %s", created.Body)
	o := decodeOrder(t, created)
	replayed := e.create(t, "agent-1", "topup-req-0900", createBody)
	require.Equal(t, http.StatusCreated, replayed.Status)
	got := e.do(t, req{method: http.MethodGet, path: "/api/v1/topups/" + o.TopupID, agent: "agent-1", key: "topup-req-0901"})
	require.Equal(t, http.StatusOK, got.Status)
	require.Equal(t, o.PayURL, decodeOrder(t, got).PayURL, "the caller does get the link")

	u, err := url.Parse(o.PayURL)
	require.NoError(t, err)
	sign := u.Query().Get("sign")
	require.Len(t, sign, 64)

	lines := e.logs.Records(t, "access")
	require.Len(t, lines, 3, "logs:\n%s", e.logs.String())
	wantIDs := []string{"topup-req-0900", "topup-req-0900", "topup-req-0901"}
	wantRoutes := []string{"/api/v1/topups", "/api/v1/topups", "/api/v1/topups/:id"}
	wantStatus := []float64{201, 201, 200}
	for i, l := range lines {
		require.Equal(t, wantIDs[i], l["request_id"], "line %d: %v", i, l)
		require.Equal(t, wantRoutes[i], l["route"], "line %d", i)
		require.Equal(t, wantStatus[i], l["status"], "line %d", i)
		require.Equal(t, "agent-1", l["user_id"], "line %d", i)
		resp, ok := l["resp"].(map[string]any)
		require.True(t, ok, "line %d has a resp group: %v", i, l)
		require.Equal(t, "json", resp["mode"], "line %d: the body is logged, redacted", i)
		text, _ := resp["text"].(string)
		require.Contains(t, text, o.TopupID, "line %d: non-sensitive fields stay readable", i)
		require.Contains(t, text, `"amount_cents":1500`, "line %d", i)
		require.Contains(t, text, `"pay_url":"[REDACTED]"`, "line %d", i)
	}
	all := e.logs.String()
	for _, secret := range []string{
		o.PayURL, strings.ReplaceAll(o.PayURL, "&", `\u0026`), url.QueryEscape(o.PayURL),
		sign, strings.TrimPrefix(topup.DefaultPayBaseURL, "https://"),
	} {
		require.NotContains(t, all, secret, "rule: the payment link never reaches a log")
	}
}
