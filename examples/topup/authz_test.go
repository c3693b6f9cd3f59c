package topup_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/examples/devices"
	"github.com/july/template/examples/topup"
)

// Every route × role, through the real HTTP stack. No roles (or only a
// role this domain does not know) is 403 FORBIDDEN before any lookup,
// the same body for an existing and a missing order; an agent creates
// top-ups, reads its own orders (another agent's is 404 like a missing
// one) and its own wallet; an admin reads any order and has no wallet.
func TestRouteRoleMatrix(t *testing.T) {
	t.Parallel()
	contract := apitest.OpenAPI(t)
	e := newEnv(t, envOpts{})
	callers := map[string]req{
		"no roles":    {agent: "agent-a", roles: []string{}}, // even the owner's own subject
		"other role":  {agent: "agent-a", roles: []string{"super_admin"}},
		"agent":       {agent: "agent-a"},
		"other agent": {agent: "agent-b"},
		"admin":       {agent: "ops-1", roles: []string{topup.RoleAdmin}},
		// REGRESSION: role names were shared, so the devices admin read
		// every top-up and its pay_url. A role of another domain grants
		// nothing here.
		"devices admin": {agent: "ops-2", roles: []string{devices.RoleAdmin, devices.RoleAgent}},
	}
	created := e.create(t, "agent-a", "authz-matrix-0000", createBody)
	require.Equal(t, http.StatusCreated, created.Status, created.Body)
	order := decodeOrder(t, created)

	tests := []struct {
		route, method, path, body string
		want                      map[string]int // by caller
	}{
		{"create", http.MethodPost, "/api/v1/topups", createBody, map[string]int{"no roles": 403, "other role": 403, "devices admin": 403, "agent": 201, "other agent": 201, "admin": 403}},
		{"get order", http.MethodGet, "/api/v1/topups/" + order.TopupID, "", map[string]int{"no roles": 403, "other role": 403, "devices admin": 403, "agent": 200, "other agent": 404, "admin": 200}},
		{"get missing order", http.MethodGet, "/api/v1/topups/" + uuid.NewString(), "", map[string]int{"no roles": 403, "other role": 403, "devices admin": 403, "agent": 404, "other agent": 404, "admin": 404}},
		{"wallet", http.MethodGet, "/api/v1/wallets/me", "", map[string]int{"no roles": 403, "other role": 403, "devices admin": 403, "agent": 200, "other agent": 200, "admin": 403}},
	}
	var forbidden []string
	for _, tt := range tests {
		for who, want := range tt.want {
			c := callers[who]
			c.method, c.path, c.body = tt.method, tt.path, tt.body
			if tt.method == http.MethodPost {
				c.key = "authz-matrix-" + strings.ReplaceAll(who, " ", "-")
			}
			r := e.do(t, c)
			contract.Check(t, r)
			require.Equal(t, want, r.Status, "%s as %s: %s", tt.route, who, r.Body)
			switch want {
			case http.StatusForbidden:
				require.Equal(t, httpx.CodeForbidden, r.Error.Code)
				require.False(t, r.Error.Retryable)
				forbidden = append(forbidden, stripRequestID(r.Body))
			case http.StatusNotFound:
				require.Equal(t, topup.CodeNotFound, r.Error.Code)
			case http.StatusOK:
				if tt.route == "get order" {
					require.Equal(t, order, decodeOrder(t, r), "%s as %s", tt.route, who)
				}
			}
		}
	}
	for _, b := range forbidden[1:] {
		require.Equal(t, forbidden[0], b, "rule: one 403 for every route, existing or missing order")
	}
	require.Contains(t, forbidden[0], "代理商（topup.agent）")

	// The regression: a token with no roles created top-ups and its
	// wallet was credited. Now nothing is stored, no event is written.
	require.Equal(t, 3, e.count(t, "ex_topup_order", ""), "the first order and the two agents' creates")
	require.Zero(t, e.count(t, "ex_topup_order", "agent_id NOT IN (?, ?)", "agent-a", "agent-b"))
	require.Equal(t, 3, e.count(t, "tb_outbox_event", "event_type = ?", topup.EventCreated), "rule: a refused create writes no event")
}

// stripRequestID drops the envelope's request_id, the one field two
// otherwise identical answers differ in.
func stripRequestID(body string) string {
	const field = `"request_id":"`
	i := strings.Index(body, field)
	if i < 0 {
		return body
	}
	j := strings.Index(body[i+len(field):], `"`)
	return body[:i] + body[i+len(field)+j+1:]
}

// REGRESSION: the create route read and parsed the body before the role
// check, so a token without the agent role got 422 for a bad amount and a
// million-digit amount_cents cost seconds of CPU. Now the role decides
// first: a roleless create is 403 whatever its body, and the body is not
// even read: one declared and never sent (over net/http's 256 KiB
// post-handler discard) is answered 403, where reading it would end in 408
// BODY_TOO_SLOW.
func TestCreateChecksTheRoleBeforeTheBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	huge := `{"amount_cents":1.` + strings.Repeat("0", 1<<20-64) + `1,"channel":"wechat"}`
	for who, roles := range map[string][]string{"no roles": {}, "admin only": {topup.RoleAdmin}} {
		r := e.do(t, req{method: http.MethodPost, path: "/api/v1/topups", body: huge, agent: "agent-a", roles: roles, key: "authz-body-000001"})
		require.Equal(t, http.StatusForbidden, r.Status, "%s: %s", who, r.Body)
		require.Equal(t, httpx.CodeForbidden, r.Error.Code)

		tok := apitest.Token(t, testSecret, "agent-a", roles...)
		raw := apitest.Raw(t, e.srv.URL, "POST /api/v1/topups HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tok+
			"\r\nContent-Type: application/json\r\nX-Request-ID: authz-body-000002\r\nContent-Length: 524288\r\n\r\n")
		require.Equal(t, http.StatusForbidden, raw.Status, "%s, body never sent: %s", who, raw.Body)
	}
	require.Zero(t, e.count(t, "ex_topup_order", ""))
}
