package main

import (
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/apps/domain"
	"github.com/july/template/apps/internal/domains"
	"github.com/july/template/apps/internal/testdomain"
	"github.com/july/template/core/ports"
)

// call is one request of TestOpenAPIContract against one app.
type call struct {
	app *apiApp
	req apitest.Request
}

// outageCalls send every /api/v1 operation to a, whose Postgres refuses
// connections: each answers 503 DEPENDENCY_UNAVAILABLE.
func outageCalls(t *testing.T, a *apiApp) []call {
	t.Helper()
	adm := admin(t)
	return []call{
		{a, apitest.Request{Method: "GET", Path: "/api/v1/system-configs?module=test", Token: adm}},
		{a, apitest.Request{Method: "GET", Path: configsPath + "test.conf.none", Token: adm}},
		{a, apitest.Request{Method: "PUT", Path: configsPath + keyCount, Token: adm, Body: `{"value":2}`}},
	}
}

// TestOpenAPIContract exercises every documented operation and status of
// the foundation against the real app (each response is validated by do)
// and fails when the server and docs/openapi.yaml disagree on the set of
// routes or when a documented status of a foundation operation is never
// produced here (500 aside: nothing public triggers it on purpose). The
// service's domains' operations are documented and served too; their
// statuses are their own tests' to exercise. The test-only domain is in
// no contract.
func TestOpenAPIContract(t *testing.T) {
	t.Parallel()
	c := apitest.OpenAPI(t)
	a := startAPI(t, appOpts{})
	down := startAPI(t, appOpts{redisURL: "redis://127.0.0.1:1/0"})
	pgDown := startAPI(t, appOpts{proxied: true})
	pgDown.pg.Down()
	adm := admin(t)
	ops := token(t, "ops-1", "ops")
	key := configsPath + keyCount
	big := `{"value":"` + strings.Repeat("x", 2<<20) + `"}`

	seen := map[string]bool{}
	record := func(app *apiApp, r apitest.Request) response {
		t.Helper()
		res := app.do(t, r)
		seen[strings.ToUpper(r.Method)+" "+res.route+" "+http.StatusText(res.Status)] = true
		require.NotEmpty(t, res.Header.Get("X-Request-ID"), "%s %s", r.Method, r.Path)
		return res
	}
	calls := []call{
		{a, apitest.Request{Method: "GET", Path: "/healthz"}},
		{a, apitest.Request{Method: "GET", Path: "/readyz"}},
		{down, apitest.Request{Method: "GET", Path: "/readyz"}},
		{pgDown, apitest.Request{Method: "GET", Path: "/readyz"}},
		{a, apitest.Request{Method: "GET", Path: "/openapi.yaml"}},
		{a, apitest.Request{Method: "GET", Path: "/api/v1/system-configs?module=test", Token: adm}},
		{a, apitest.Request{Method: "GET", Path: "/api/v1/system-configs?module=x-y", Token: adm}},
		{a, apitest.Request{Method: "GET", Path: "/api/v1/system-configs"}},
		{a, apitest.Request{Method: "GET", Path: "/api/v1/system-configs", Token: ops}},
		{a, apitest.Request{Method: "GET", Path: key, Token: adm}},
		{a, apitest.Request{Method: "GET", Path: configsPath + "test.conf.none", Token: adm}},
		{a, apitest.Request{Method: "GET", Path: configsPath + "bad_key", Token: adm}},
		{a, apitest.Request{Method: "GET", Path: key}},
		{a, apitest.Request{Method: "GET", Path: key, Token: ops}},
		{a, apitest.Request{Method: "PUT", Path: key, Token: adm, Body: `{"value":2}`}},
		{a, apitest.Request{Method: "PUT", Path: key, Token: adm, Body: `{"value":`}},
		{a, apitest.Request{Method: "PUT", Path: key, Body: `{"value":2}`}},
		{a, apitest.Request{Method: "PUT", Path: key, Token: ops, Body: `{"value":2}`}},
		{a, apitest.Request{Method: "PUT", Path: configsPath + "test.conf.none", Token: adm, Body: `{"value":2}`}},
		{a, apitest.Request{Method: "PUT", Path: configsPath + keyFixed, Token: adm, Body: `{"value":"y"}`}},
		{a, apitest.Request{Method: "PUT", Path: key, Token: adm, Body: `{"value":2,"version":0}`}},
		{a, apitest.Request{Method: "PUT", Path: key, Token: adm, Body: big}},
		{a, apitest.Request{Method: "PUT", Path: key, Token: adm, Body: `{"value":2}`, Header: map[string]string{"Content-Type": "text/plain"}}},
		{a, apitest.Request{Method: "PUT", Path: key, Token: adm, Body: `{"value":99}`}},
		{a, apitest.Request{Method: "PUT", Path: configsPath + keyDoc, Token: adm, Body: `{"value":{"x":[1,true,null]}}`}},
	}
	flooder := token(t, "ops-flooder", "ops")
	for range 20 {
		record(a, apitest.Request{Method: "PUT", Path: key, Token: flooder, Body: `{"value":2}`})
	}
	calls = append(calls, call{a, apitest.Request{Method: "PUT", Path: key, Token: flooder, Body: `{"value":2}`}})
	calls = append(calls, outageCalls(t, pgDown)...)
	for _, cl := range calls {
		record(cl.app, cl.req)
	}

	ofDomains := domainRoutes(t, a)
	var documented []string
	for path, item := range c.Doc.Paths.Map() {
		for method, op := range item.Operations() {
			if ofDomains[method+" "+path] {
				continue
			}
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
		if r.Method == echo.RouteNotFound || strings.HasPrefix(r.Path, testdomain.RouteOrders) { // catch-alls; the test-only domain
			continue
		}
		served = append(served, r.Method+" "+param.ReplaceAllString(r.Path, "{$1}"))
	}
	var inDoc []string
	for path, item := range c.Doc.Paths.Map() {
		for method := range item.Operations() {
			inDoc = append(inDoc, method+" "+path)
		}
	}
	slices.Sort(served)
	slices.Sort(inDoc)
	require.Equal(t, inDoc, served, "echo routes and %s differ", c.Path)
}

// domainRoutes are the operations ("GET /api/v1/orders/{id}") the
// service's domains serve: each domain's routes, registered on a scratch
// server the way apps/api registers them.
func domainRoutes(t *testing.T, a *apiApp) map[string]bool {
	t.Helper()
	e := echo.New()
	for _, d := range domains.All() {
		if d.API == nil || d.Name == testdomain.Domain().Name {
			continue
		}
		api, err := d.API(domain.APIDeps{DB: a.db.Bun, Clock: ports.SystemClock, Config: a.svc, Guard: a.guard, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err, "build domain %s", d.Name)
		api.Register(e.Group("/api/v1"))
	}
	param := regexp.MustCompile(`:([a-z_]+)`)
	out := map[string]bool{}
	for _, r := range e.Routes() {
		out[r.Method+" "+param.ReplaceAllString(r.Path, "{$1}")] = true
	}
	return out
}
