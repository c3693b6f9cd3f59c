package topup_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/require"
)

// The shared OpenAPI document still loads and validates with this domain's
// operations in it, each with the statuses the handlers answer.
func TestOpenAPIDocumentsTopupRoutes(t *testing.T) {
	t.Parallel()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	path := filepath.Join(filepath.Dir(file), "..", "..", "docs", "openapi.yaml")
	doc, err := openapi3.NewLoader().LoadFromFile(path)
	require.NoError(t, err, "load %s", path)
	require.NoError(t, doc.Validate(t.Context()), "validate %s", path)

	tests := []struct {
		path, method string
		statuses     []string
	}{
		{"/api/v1/topups", "POST", []string{"201", "400", "401", "409", "422", "500"}},
		{"/api/v1/topups/{id}", "GET", []string{"200", "401", "404", "500"}},
		{"/api/v1/wallets/me", "GET", []string{"200", "401", "500"}},
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
	_, file, _, _ := runtime.Caller(0)
	doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "openapi.yaml"))
	require.NoError(t, err)
	doc.Servers = nil // match any host
	router, err := gorillamux.NewRouter(doc)
	require.NoError(t, err)

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
		seen[res.status] = true
		hr, err := http.NewRequest(c.method, e.srv.URL+c.path, nil)
		require.NoError(t, err)
		route, params, err := router.FindRoute(hr)
		require.NoError(t, err, "%s %s is documented", c.method, c.path)
		in := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: hr, PathParams: params, Route: route},
			Status:                 res.status, Header: res.header,
			Body:    io.NopCloser(strings.NewReader(res.body)),
			Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
		}
		require.NoError(t, openapi3filter.ValidateResponse(context.Background(), in),
			"%s %s -> %d does not match the document: %s", c.method, c.path, res.status, res.body)
	}
	for _, s := range []int{200, 201, 400, 401, 404, 422} {
		require.True(t, seen[s], "status %d exercised", s)
	}
}
