package main

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

// call is one request of TestOpenAPIContract against one app.
type call struct {
	app *apiApp
	req req
}

// TestOpenAPIContract exercises every documented operation and status
// against the real app (each response is validated by do) and fails when
// the server and docs/openapi.yaml disagree on the set of routes or when a
// documented status is never produced here (500 aside: nothing public
// triggers it on purpose).
func TestOpenAPIContract(t *testing.T) {
	t.Parallel()
	c := contract(t)
	a := startAPI(t, appOpts{})
	down := startAPI(t, appOpts{redisURL: "redis://127.0.0.1:1/0"})
	adm := admin(t)
	ops := token(t, "ops-1", "ops")
	key := configsPath + keyCount
	big := `{"value":"` + strings.Repeat("x", 2<<20) + `"}`

	seen := map[string]bool{}
	record := func(app *apiApp, r req) response {
		t.Helper()
		res := app.do(t, r)
		seen[strings.ToUpper(r.method)+" "+res.route+" "+http.StatusText(res.status)] = true
		require.NotEmpty(t, res.header.Get("X-Request-ID"), "%s %s", r.method, r.path)
		return res
	}
	calls := []call{
		{a, req{method: "GET", path: "/healthz"}},
		{a, req{method: "GET", path: "/readyz"}},
		{down, req{method: "GET", path: "/readyz"}},
		{a, req{method: "GET", path: "/metrics"}},
		{a, req{method: "GET", path: "/api/v1/system-configs?module=test", token: adm}},
		{a, req{method: "GET", path: "/api/v1/system-configs?module=x-y", token: adm}},
		{a, req{method: "GET", path: "/api/v1/system-configs"}},
		{a, req{method: "GET", path: "/api/v1/system-configs", token: ops}},
		{a, req{method: "GET", path: key, token: adm}},
		{a, req{method: "GET", path: configsPath + "test.conf.none", token: adm}},
		{a, req{method: "GET", path: configsPath + "bad_key", token: adm}},
		{a, req{method: "GET", path: key}},
		{a, req{method: "GET", path: key, token: ops}},
		{a, req{method: "PUT", path: key, token: adm, body: `{"value":2}`}},
		{a, req{method: "PUT", path: key, token: adm, body: `{"value":`}},
		{a, req{method: "PUT", path: key, body: `{"value":2}`}},
		{a, req{method: "PUT", path: key, token: ops, body: `{"value":2}`}},
		{a, req{method: "PUT", path: configsPath + "test.conf.none", token: adm, body: `{"value":2}`}},
		{a, req{method: "PUT", path: configsPath + keyFixed, token: adm, body: `{"value":"y"}`}},
		{a, req{method: "PUT", path: key, token: adm, body: `{"value":2,"version":0}`}},
		{a, req{method: "PUT", path: key, token: adm, body: big}},
		{a, req{method: "PUT", path: key, token: adm, body: `{"value":2}`, header: map[string]string{"Content-Type": "text/plain"}}},
		{a, req{method: "PUT", path: key, token: adm, body: `{"value":99}`}},
		{a, req{method: "PUT", path: configsPath + keyDoc, token: adm, body: `{"value":{"x":[1,true,null]}}`}},
	}
	calls = append(calls, exampleCalls(t, a, record)...)
	for _, cl := range calls {
		record(cl.app, cl.req)
	}

	var documented []string
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status := range op.Responses.Map() {
				if status == "500" {
					continue
				}
				code, err := strconv.Atoi(status)
				require.NoError(t, err, "%s %s: status %q must be a number", method, path, status)
				k := method + " " + path + " " + http.StatusText(code)
				documented = append(documented, k)
				require.True(t, seen[k], "documented response %s %s %s is never exercised", method, path, status)
			}
		}
	}
	require.NotEmpty(t, documented)

	// Every served route is documented, and every documented one served.
	param := regexp.MustCompile(`:([a-z_]+)`)
	var served []string
	for _, r := range a.echo.Routes() {
		if r.Method == echo.RouteNotFound { // the auth group's catch-alls, not operations
			continue
		}
		served = append(served, r.Method+" "+param.ReplaceAllString(r.Path, "{$1}"))
	}
	var inDoc []string
	for path, item := range c.doc.Paths.Map() {
		for method := range item.Operations() {
			inDoc = append(inDoc, method+" "+path)
		}
	}
	slices.Sort(served)
	slices.Sort(inDoc)
	require.Equal(t, inDoc, served, "echo routes and %s differ", openAPIPath)
}
