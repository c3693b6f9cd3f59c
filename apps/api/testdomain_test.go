package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/apps/internal/domains"
	"github.com/july/template/apps/internal/testdomain"
)

// The foundation's tests run on the test-only domain, so they test the
// foundation whatever domains the service lists (none included).
func init() { domains.Include(testdomain.Domain()) }

// writer is a token that may create test-domain orders.
func writer(t *testing.T, sub string) string { return token(t, sub, testdomain.RoleWriter) }

// tdOrder is a valid create body; pad bytes of an unknown field make it
// about that much longer.
func tdOrder(amount, pad int) string {
	if pad == 0 {
		return `{"amount":` + itoa(amount) + `,"note":"test"}`
	}
	head := `{"amount":` + itoa(amount) + `,"note":"test","pad":"`
	return head + strings.Repeat("x", max(pad-len(head)-2, 0)) + `"}`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// tdCreate creates an order for tok under key and returns its id.
func (a *apiApp) tdCreate(t *testing.T, tok, key string, amount int) string {
	t.Helper()
	res := a.do(t, apitest.Request{Method: "POST", Path: testdomain.RouteOrders, Token: tok, Body: tdOrder(amount, 0),
		Header: map[string]string{"Idempotency-Key": key}})
	require.Equal(t, http.StatusCreated, res.Status, res.Body)
	return orderID(t, res.Body)
}

func orderID(t *testing.T, body string) string {
	t.Helper()
	var o testdomain.OrderView
	require.NoError(t, json.Unmarshal([]byte(body), &o), body)
	require.NotEmpty(t, o.OrderID, body)
	return o.OrderID
}

// checkContract validates res against docs/openapi.yaml and returns the
// documented path. The test-only domain is in no contract: its errors are
// still the foundation's envelope, checked against its schema, and its
// answers carry the request id.
func checkContract(t *testing.T, res apitest.Response) string {
	t.Helper()
	if !strings.HasPrefix(res.Request.URL.Path, testdomain.RouteOrders) {
		return apitest.OpenAPI(t).Check(t, res)
	}
	require.NotEmpty(t, res.Header.Get("X-Request-ID"), "%s %s: X-Request-ID", res.Request.Method, res.Request.URL.Path)
	if res.Status < 400 {
		return ""
	}
	require.Equal(t, "application/json", strings.Split(res.Header.Get("Content-Type"), ";")[0], res.Body)
	schema := apitest.OpenAPI(t).Doc.Components.Schemas["ErrorEnvelope"].Value
	var body any
	d := json.NewDecoder(bytes.NewReader([]byte(res.Body)))
	d.UseNumber()
	require.NoError(t, d.Decode(&body), res.Body)
	require.NoError(t, schema.VisitJSON(body), "%s %s -> %d: not the error envelope: %s", res.Request.Method, res.Request.URL.Path, res.Status, res.Body)
	return ""
}

// missingOrder is an order id no test creates.
const missingOrder = "00000000-0000-4000-8000-000000000000"
