package topup_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
)

// The shared OpenAPI document still loads and validates with this domain's
// operations in it, each with the statuses the handlers answer.
func TestOpenAPIDocumentsTopupRoutes(t *testing.T) {
	t.Parallel()
	doc := apitest.OpenAPI(t).Doc

	tests := []struct {
		path, method string
		statuses     []string
	}{
		{"/api/v1/topups", "POST", []string{"201", "400", "401", "403", "409", "413", "415", "422", "429", "500", "503"}},
		{"/api/v1/topups/{id}", "GET", []string{"200", "400", "401", "403", "404", "500", "503"}},
		{"/api/v1/wallets/me", "GET", []string{"200", "401", "403", "500", "503"}},
	}
	for _, tt := range tests {
		item := doc.Paths.Find(tt.path)
		require.NotNil(t, item, "path %s is documented", tt.path)
		op := item.GetOperation(tt.method)
		require.NotNil(t, op, "%s %s is documented", tt.method, tt.path)
		var got []string
		for status := range op.Responses.Map() {
			got = append(got, status)
		}
		require.ElementsMatch(t, tt.statuses, got, "%s %s statuses", tt.method, tt.path)
	}
}

// Every response the handlers give matches the document (status, headers,
// body schema), as apps/api's contract test will check once wired.
func TestResponsesMatchOpenAPI(t *testing.T) {
	t.Parallel()
	contract := apitest.OpenAPI(t)
	e := newEnv(t, envOpts{})
	o := decodeOrder(t, e.create(t, "agent-1", "topup-req-1000", createBody))
	require.NoError(t, credit(t, e, e.envelopeOf(t, o.TopupID)))
	calls := []req{
		{method: "POST", path: "/api/v1/topups", body: createBody, agent: "agent-1", key: "topup-req-1001"},
		{method: "POST", path: "/api/v1/topups", body: createBody, agent: "agent-1", key: "topup-req-1001"},
		{method: "POST", path: "/api/v1/topups", body: `{"amount_cents":1}`, agent: "agent-1", key: "topup-req-1001"},
		{method: "POST", path: "/api/v1/topups", body: `{"amount_cents":0,"channel":"wechat"}`, agent: "agent-1", key: "topup-req-1002"},
		{method: "POST", path: "/api/v1/topups", body: createBody, agent: "agent-1"},
		{method: "POST", path: "/api/v1/topups", body: `[]`, agent: "agent-1", key: "topup-req-1003"},
		{method: "POST", path: "/api/v1/topups", body: createBody, key: "topup-req-1004"},
		{method: "GET", path: "/api/v1/topups/" + o.TopupID, agent: "agent-1"},
		{method: "GET", path: "/api/v1/topups/" + o.TopupID, agent: "agent-2"},
		{method: "GET", path: "/api/v1/topups/" + o.TopupID},
		{method: "GET", path: "/api/v1/wallets/me", agent: "agent-1"},
		{method: "GET", path: "/api/v1/wallets/me", agent: "agent-2"},
		{method: "GET", path: "/api/v1/wallets/me"},
	}
	seen := map[int]bool{}
	for _, c := range calls {
		res := e.do(t, c)
		seen[res.Status] = true
		contract.Check(t, res)
	}
	for _, s := range []int{200, 201, 400, 401, 404, 422} {
		require.True(t, seen[s], "status %d exercised", s)
	}
}
